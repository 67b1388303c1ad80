"""Training augmentation as in the reference (METHOD.md §1.4), done on the batch's device.

Random resize of the shorter side to a size from the current resolution stage, then a random crop.
UVL data is resized with nearest neighbour only (UVs and labels never blend); photos bilinearly. The
reference's circle mask (a laparoscopy leftover that corrupts labels) is deliberately absent.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor


def resize_shorter_side(height: int, width: int, short: int) -> tuple[int, int]:
    """Size (H, W) scaled so that min(H, W) = short, keeping the aspect ratio."""
    scale = short / min(height, width)
    return max(short, round(height * scale)), max(short, round(width * scale))


def random_crop_offsets(height: int, width: int, crop: int, generator: torch.Generator | None) -> tuple[int, int]:
    if height < crop or width < crop:
        raise ValueError(f"cannot crop {crop}x{crop} from a {height}x{width} image; lower the crop size")
    top = int(torch.randint(0, height - crop + 1, (1,), generator=generator))
    left = int(torch.randint(0, width - crop + 1, (1,), generator=generator))
    return top, left


def augment_sim(uv: Tensor, label: Tensor, short_side: int, crop: int,
                generator: torch.Generator | None = None) -> tuple[Tensor, Tensor]:
    """Resize (nearest) and crop a G-buffer batch, one random crop per image.

    Args:
        uv: (B, 2, H, W) float; label: (B, H, W) int64.
        short_side: target of the shorter side before cropping.
        crop: square crop size.

    Returns:
        (B, 2, crop, crop) UVs and (B, crop, crop) labels.
    """
    size = resize_shorter_side(uv.shape[-2], uv.shape[-1], short_side)
    uv = F.interpolate(uv, size=size, mode="nearest")
    label = F.interpolate(label[:, None].float(), size=size, mode="nearest")[:, 0].long()
    uvs, labels = [], []
    for b in range(uv.shape[0]):
        top, left = random_crop_offsets(*size, crop, generator)
        uvs.append(uv[b, :, top:top + crop, left:left + crop])
        labels.append(label[b, top:top + crop, left:left + crop])
    return torch.stack(uvs), torch.stack(labels)


def augment_real(images: Tensor, short_side: int, crop: int, generator: torch.Generator | None = None) -> Tensor:
    """Resize (bilinear, antialiased) and crop photos: (B, 3, H, W) -> (B, 3, crop, crop)."""
    size = resize_shorter_side(images.shape[-2], images.shape[-1], short_side)
    images = F.interpolate(images, size=size, mode="bilinear", align_corners=False, antialias=True)
    out = []
    for b in range(images.shape[0]):
        top, left = random_crop_offsets(*size, crop, generator)
        out.append(images[b, :, top:top + crop, left:left + crop])
    return torch.stack(out)
