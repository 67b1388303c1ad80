"""Shaded texture output: the translation's surfaces are the texture times a shading (docs/method.md §3.3).

The reference decodes x_ab from the content code alone, so the texture reaches the image only through the
encoder's 8-channel bottleneck and the decoder must redraw every colour and pattern from it. With shading,
the decoder's image is kept for void pixels (background), and every surface pixel is the sampled texture
(its albedo) times a gain that the decoder draws: x_ab = 2·t·(1 + s) - 1. It is not clamped to [-1, 1]:
a clamp would stop every gradient at pixels that overshoot, and a texture pushed to white or black would
stay there; the discriminator sees the overshoot and pulls it back. The texture then
receives the gradient of every loss on x_ab directly, per pixel, and has to carry the real colours and
patterns; the decoder only shades them. With one shading channel the gain is grey, so colour can come
from the texture only.
"""

from __future__ import annotations

from torch import Tensor


def shade(image: Tensor, shading: Tensor, texture: Tensor, shaded: Tensor) -> Tensor:
    """Compose the sim->real translation from the decoder's outputs and the sampled texture.

    Args:
        image: (B, 3, H, W) the decoder's image in [-1, 1]; used where ``shaded`` is False (void, and the
            labels the decoder draws itself).
        shading: (B, S, H, W) in [-1, 1], S = 1 (grey) or 3 (per channel); the gain is ``1 + shading``,
            in [0, 2] (1 = the texture as it is).
        texture: (B, 3, H, W) sampled texture in [0, 1] (the albedo).
        shaded: (B, H, W) bool, True on the surface pixels that show the shaded texture.

    Returns:
        (B, 3, H, W): in [-1, 1] where the image is kept, in [-1, 3] on shaded pixels (clamp for display).
    """
    surface = 2.0 * texture * (1.0 + shading) - 1.0
    return surface.to(image.dtype).where(shaded.unsqueeze(1), image)
