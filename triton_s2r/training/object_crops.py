"""Crops around the moving objects, in the translations and in the photos (docs/method.md §4.9).

The objects cover a few percent of a frame, so the whole-frame discriminators spend little of their capacity on
them. ``object_adversarial`` adds a discriminator that sees only windows around objects. In a sim frame the labels
say where the objects are; in a photo they are not labelled, but the photo's robot and static objects are rendered
from its logged states (``RobotViews``), so what neither the translation of that render nor its texture explains on
the table is the objects (and their shadows). Each image gets one window, its centre drawn where the objectness is
highest:

1. objectness (B, H, W) >= 0: the moving objects' mask (sim), or on the render's static surfaces the geometric mean
   of the residuals |photo - explanation| over the render's explanations (photos): the translation drawn shading
   and all, and the texture, which the texture pairing fits to the photos;
2. a box filter of about an object's size, so that a window centres on an object rather than on its edge;
3. a centre drawn with probability proportional to (filtered / its image's maximum) ** ``SHARPNESS``;
4. a ``window`` x ``window`` crop there, kept inside the image, resampled to ``size`` x ``size``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

SHARPNESS = 16.0  # how strongly the centres prefer the objectness peaks: the table's grain leaves a small residual


def sim_objectness(label: Tensor, object_ids: Tensor) -> Tensor:
    """(B, H, W) int64 labels -> (B, H, W) float: 1 on the moving objects (labels ``object_ids``), else 0."""
    return torch.isin(label, object_ids.to(label.device)).float()


def photo_objectness(photo: Tensor, explanations: list[Tensor], render_label: Tensor, static_ids: Tensor) -> Tensor:
    """Where the photos differ from every explanation of their robot-and-table renders, on the static surfaces.

    Each residual alone mistakes what its explanation gets wrong for an object (the translation's shading, the
    flat texture's shadows); an object is what neither explains (docs/method.md §4.9).

    Args:
        photo: (B, 3, H, W) in [-1, 1].
        explanations: (B, >= 3, H, W) images of the renders in [-1, 1] (their first three channels compared): the
            translation of the render, its texture projection.
        render_label: (B, H, W) int64 labels of the renders.
        static_ids: (S,) int64 labels of the static objects (the table): objects stand on them.

    Returns:
        (B, H, W) float >= 0, the geometric mean over the explanations of the mean absolute difference over the
        channels, 0 off the static surfaces; no gradient.
    """
    photo = photo.detach().float()
    residuals = torch.stack([(photo - image[:, :3].detach().float()).abs().mean(1) for image in explanations])
    return residuals.log().mean(0).exp() * torch.isin(render_label, static_ids.to(render_label.device))


def draw_centres(objectness: Tensor, window: int, generator: torch.Generator | None = None) -> Tensor:
    """One window centre per image where the box-filtered objectness peaks (module docstring, steps 2-3).

    Args:
        objectness: (B, H, W) float >= 0.
        window: the crops' side in pixels; the filter's side is about a quarter of it (odd).
        generator: the random draws' generator (None: torch's default).

    Returns:
        (B, 2) int64 (row, column) pixel indices; an image without objectness gets a centre drawn uniformly.
    """
    width = objectness.shape[-1]
    side = max(3, window // 4) | 1
    filtered = F.avg_pool2d(objectness[:, None].float(), side, stride=1, padding=side // 2,
                            count_include_pad=False)[:, 0].flatten(1)
    peak = filtered.amax(1, keepdim=True).clamp_min(1e-6)
    weights = (filtered / peak) ** SHARPNESS + 1e-6
    index = torch.multinomial(weights, 1, generator=generator)[:, 0]
    return torch.stack((index // width, index % width), 1)


def crop_windows(images: Tensor, centres: Tensor, window: int, size: int) -> Tensor:
    """``window`` x ``window`` crops centred at ``centres``, moved inside the image, resampled to ``size`` x ``size``.

    Args:
        images: (B, C, H, W) float, H and W >= ``window``.
        centres: (B, 2) int64 (row, column).
        window: the windows' side in pixels (even: every sample then falls on a pixel centre).
        size: the side they are resampled to.

    Returns:
        (B, C, size, size), bilinear (the pixels themselves where ``size == window``); differentiable in ``images``.
    """
    height, width = images.shape[-2:]
    if min(height, width) < window:
        raise ValueError(f"object crops of {window} px do not fit {height}x{width} images; lower "
                         "system.object_crop_fraction")
    half = window / 2
    # A window spans the pixels [c - window / 2, c + window / 2) around an integer c: samples fall on pixel centres.
    row = centres[:, 0].to(images.dtype).clamp(half, height - half)
    col = centres[:, 1].to(images.dtype).clamp(half, width - half)
    theta = torch.zeros(images.shape[0], 2, 3, dtype=images.dtype, device=images.device)
    theta[:, 0, 0], theta[:, 0, 2] = window / width, 2 * col / width - 1
    theta[:, 1, 1], theta[:, 1, 2] = window / height, 2 * row / height - 1
    grid = F.affine_grid(theta, [images.shape[0], images.shape[1], size, size], align_corners=False)
    return F.grid_sample(images, grid, mode="bilinear", padding_mode="border", align_corners=False)
