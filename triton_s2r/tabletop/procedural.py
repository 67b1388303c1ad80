"""Drawing primitives of the procedural textures: value noise, colour blends, texel grids and text.

Image convention as in ``triton_s2r.tabletop.materials``: (H, W) or (H, W, 3) float32 arrays whose row 0 is
the top (v = 1) and column 0 is u = 0.
"""

from __future__ import annotations

import cv2
import numpy as np


def fractal_noise(rng: np.random.Generator, shape: tuple[int, int], base_cells: int = 4, octaves: int = 4,
                  stretch: tuple[float, float] = (1.0, 1.0)) -> np.ndarray:
    """Smooth value noise summed over octaves (fBm), roughly zero-mean, about unit amplitude.

    Args:
        rng: random generator.
        shape: (H, W) of the output.
        base_cells: lattice cells across the image at the coarsest octave.
        octaves: number of octaves, each with twice the frequency and half the amplitude.
        stretch: (rows, cols) lattice-density factors; (4, 0.25) gives streaks along the columns (u).

    Returns:
        (H, W) float32.
    """
    h, w = shape
    out = np.zeros(shape, np.float32)
    amplitude, total = 1.0, 0.0
    for octave in range(octaves):
        cells = base_cells * 2**octave
        grid = rng.standard_normal((max(2, int(cells * stretch[0])) + 1, max(2, int(cells * stretch[1])) + 1))
        out += amplitude * cv2.resize(grid.astype(np.float32), (w, h), interpolation=cv2.INTER_CUBIC)
        total += amplitude
        amplitude *= 0.5
    return out / total


def lerp(a: np.ndarray, b: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Per-pixel blend of colours a and b; t is (H, W) in [0, 1]."""
    return a + (b - a) * t[..., None]


def texel_grid(size: int) -> tuple[np.ndarray, np.ndarray]:
    """(u, v) of every texel centre of a (size, size) image, row 0 = v 1."""
    c = (np.arange(size, dtype=np.float32) + 0.5) / size
    return np.meshgrid(c, c[::-1])


def _fit_text(text: str, width: int, height: int, font: int, thickness_ratio: float = 0.09) -> tuple[float, int]:
    """Font scale and thickness for ``text`` to fill about (width, height) pixels."""
    (tw, th), _ = cv2.getTextSize(text, font, 1.0, 1)
    scale = min(width / tw, height / th)
    return scale, max(1, int(round(thickness_ratio * height)))


def draw_text(canvas: np.ndarray, text: str, colour: np.ndarray, box: tuple[int, int, int, int],
               font: int = cv2.FONT_HERSHEY_DUPLEX, thickness_ratio: float = 0.09) -> None:
    """Draw ``text`` centred in ``box`` = (x0, y0, x1, y1) of ``canvas`` (in place, anti-aliased)."""
    x0, y0, x1, y1 = box
    scale, thickness = _fit_text(text, x1 - x0, y1 - y0, font, thickness_ratio)
    (tw, th), _ = cv2.getTextSize(text, font, scale, thickness)
    origin = (int(x0 + (x1 - x0 - tw) / 2), int(y0 + (y1 - y0 + th) / 2))
    # OpenCV draws text only into 8-bit images: draw a coverage mask and blend the colour through it.
    mask = np.zeros(canvas.shape[:2], np.uint8)
    cv2.putText(mask, text, origin, font, scale, 255, thickness, cv2.LINE_AA)
    canvas[:] = lerp(canvas, np.asarray(colour, np.float32), mask.astype(np.float32) / 255)

