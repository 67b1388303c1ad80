"""The camera model of the "real" frames: linear radiance to an 8-bit sRGB photo.

Exposure, white balance, vignetting, blur, shot and read noise and a soft highlight roll-off, with the
per-frame parameters of ``triton_s2r.tabletop.lighting.FrameLighting``; plus the sRGB transfer functions.
"""

from __future__ import annotations

from collections.abc import Sequence

import cv2
import numpy as np

from triton_s2r.tabletop.lighting import FrameLighting


def srgb_to_linear(x: np.ndarray) -> np.ndarray:
    """sRGB-encoded values in [0, 1] to linear reflectance."""
    return np.where(x <= 0.04045, x / 12.92, ((x + 0.055) / 1.055) ** 2.4).astype(np.float32)


def linear_to_srgb(x: np.ndarray) -> np.ndarray:
    """Linear values in [0, 1] to sRGB encoding."""
    x = np.clip(x, 0.0, 1.0)
    return np.where(x <= 0.0031308, 12.92 * x, 1.055 * np.power(x, 1 / 2.4) - 0.055).astype(np.float32)


def develop(radiance: np.ndarray, lighting: FrameLighting, intrinsics: Sequence[float],
            rng: np.random.Generator) -> np.ndarray:
    """Turn linear radiance into an 8-bit photo: exposure, white balance, vignetting, blur, noise, tone curve.

    Args:
        radiance: (H, W, 3) float32 linear radiance from the path tracer.
        lighting: the frame's camera-effect parameters.
        intrinsics: ``[fx, fy, cx, cy]``; vignetting is centred on the principal point.
        rng: generator of the sensor noise.

    Returns:
        (H, W, 3) uint8 sRGB.
    """
    h, w = radiance.shape[:2]
    image = radiance * (lighting.exposure * lighting.white_balance).astype(np.float32)
    _, _, cx, cy = intrinsics
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    r2 = ((x - cx) ** 2 + (y - cy) ** 2) / ((w / 2) ** 2 + (h / 2) ** 2)
    image *= (1 - lighting.vignetting * r2)[..., None]
    image = cv2.GaussianBlur(image, (0, 0), lighting.blur_sigma)
    # Photon (shot) noise grows with the signal; read noise does not.
    sigma = np.sqrt(lighting.shot_noise * np.maximum(image, 0) + lighting.read_noise**2)
    image = image + sigma * rng.standard_normal(image.shape).astype(np.float32)
    # Highlights roll off smoothly above 0.8 instead of clipping hard (a film-like shoulder).
    knee = 0.8
    image = np.where(image < knee, image, 1 - (1 - knee) * np.exp(-(image - knee) / (1 - knee)))
    return np.round(linear_to_srgb(image) * 255).astype(np.uint8)
