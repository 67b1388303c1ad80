"""Per-frame lighting and camera effects of the "real" frames, and the procedural room they are lit by.

Everything is drawn from ``(seed, frame id)`` with numpy, so a frame looks the same rendered alone or in a
batch; ``triton_s2r.tabletop.mitsuba_scene`` turns it into Mitsuba emitters and
``triton_s2r.tabletop.camera_effects`` applies the camera part.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class FrameLighting:
    """Per-frame randomised lighting and camera effects (all drawn from ``(seed, frame id)``).

    Attributes:
        env_yaw_deg: rotation of the environment map about world z.
        env_strength: scale of the environment radiance.
        light_offset: (3,) key-light position relative to the scene centre, in units of the scene radius.
        light_size: side of the square key light, in units of the scene radius.
        light_irradiance: (3,) RGB irradiance the key light casts at the scene centre.
        exposure: linear gain before the tone curve.
        white_balance: (3,) per-channel gains (a slight colour cast), mean 1.
        vignetting: relative darkening at the image corners, in [0, 1).
        blur_sigma: Gaussian blur in pixels (lens and demosaicing softness).
        shot_noise: variance of the photon noise per unit of linear signal.
        read_noise: standard deviation of signal-independent sensor noise (linear units).
        render_seed: seed of Mitsuba's sampler.
    """

    env_yaw_deg: float
    env_strength: float
    light_offset: np.ndarray
    light_size: float
    light_irradiance: np.ndarray
    exposure: float
    white_balance: np.ndarray
    vignetting: float
    blur_sigma: float
    shot_noise: float
    read_noise: float
    render_seed: int


def frame_lighting(seed: int, frame_id: int) -> FrameLighting:
    """Draw the lighting and camera effects of one frame.

    Args:
        seed: the dataset seed.
        frame_id: the frame's identifier (any non-negative integer, e.g. its index in a split).
    """
    rng = np.random.default_rng([seed, frame_id, 0x5EA1])
    azimuth = rng.uniform(0, 2 * math.pi)
    radius, height = rng.uniform(0.2, 0.7), rng.uniform(1.3, 1.9)
    warmth = rng.uniform(-1, 1)  # warm (tungsten) to cool (daylight) key light
    tint = np.array([1 + 0.12 * warmth, 1.0, 1 - 0.15 * warmth])
    return FrameLighting(
        env_yaw_deg=float(rng.uniform(0, 360)),
        env_strength=float(rng.uniform(0.7, 1.2)),
        light_offset=np.array([radius * math.cos(azimuth), radius * math.sin(azimuth), height]),
        light_size=float(rng.uniform(0.3, 0.7)),
        light_irradiance=rng.uniform(2.5, 4.5) * tint / tint.mean(),
        exposure=float(rng.uniform(0.65, 0.85)),
        white_balance=(wb := rng.uniform(0.95, 1.05, 3)) / wb.mean(),
        vignetting=float(rng.uniform(0.15, 0.35)),
        blur_sigma=float(rng.uniform(0.35, 0.7)),
        shot_noise=float(rng.uniform(2e-4, 8e-4)),
        read_noise=float(rng.uniform(2e-3, 5e-3)),
        render_seed=int(rng.integers(0, 2**31 - 1)),
    )


def environment_map(seed: int, height: int = 64) -> np.ndarray:
    """A procedural lat-long room: bright ceiling, beige walls, dark floor, a few windows and lamps.

    Args:
        seed: the dataset seed (the room stays the same across frames; only its rotation is jittered).
        height: rows of the map; it is twice as wide.

    Returns:
        (height, 2 * height, 3) float32 linear radiance; row 0 looks straight up, row ``height - 1`` down,
        columns sweep the azimuth (Mitsuba's ``envmap`` layout).
    """
    rng = np.random.default_rng([seed, 0xE7])
    width = 2 * height
    elevation = (0.5 - (np.arange(height) + 0.5) / height)[:, None] * math.pi  # +pi/2 at the top row
    azimuth = ((np.arange(width) + 0.5) / width)[None, :] * 2 * math.pi
    ceiling = rng.uniform(0.7, 1.0) * np.array([1.0, 0.97, 0.9])
    wall = rng.uniform(0.3, 0.5) * np.array([1.0, 0.93, 0.82]) * rng.uniform(0.9, 1.1, 3)
    floor = rng.uniform(0.08, 0.15) * np.array([1.0, 0.85, 0.7])
    up = np.clip(np.sin(elevation), 0, 1)[..., None]
    env = np.where(elevation[..., None] >= 0, wall + (ceiling - wall) * up**2, floor + 0 * up)
    env = np.broadcast_to(env, (height, width, 3)).copy()
    # Wall brightness varies around the room (a window side and a dark corner).
    env *= (1 + 0.25 * np.cos(azimuth - rng.uniform(0, 2 * math.pi)))[..., None]
    for _ in range(int(rng.integers(1, 4))):  # windows: bright, slightly blue rectangles on the walls
        centre, half_width = rng.uniform(0, 2 * math.pi), rng.uniform(0.15, 0.4)
        low, high = rng.uniform(0.0, 0.2), rng.uniform(0.45, 0.8)
        d_az = np.abs((azimuth - centre + math.pi) % (2 * math.pi) - math.pi)
        window = (d_az < half_width) & (elevation > low) & (elevation < high)
        env[np.broadcast_to(window, (height, width))] = rng.uniform(3, 6) * np.array([0.85, 0.95, 1.1])
    for _ in range(int(rng.integers(1, 3))):  # ceiling lamps
        az, el = rng.uniform(0, 2 * math.pi), rng.uniform(0.9, 1.4)
        d_az = np.abs((azimuth - az + math.pi) % (2 * math.pi) - math.pi) * np.cos(el)
        env += rng.uniform(10, 20) * np.exp(-(d_az**2 + (elevation - el) ** 2) / (2 * 0.06**2))[..., None] * np.array(
            [1.0, 0.9, 0.75])
    return env.astype(np.float32)
