"""Training augmentation, done on the batch's device.

Crops as in the reference (docs/method.md §1.4): random resize of the shorter side to a size from the current
resolution stage, then a random crop. UVL data is resized with nearest neighbour only (UVs and labels never
blend); photos bilinearly. The reference's circle mask (a laparoscopy leftover that corrupts labels) is
deliberately absent.

Discriminator augmentation (ours, docs/method.md §3.2.1): ``diff_augment`` shifts and cuts out every image the
discriminators see, real and translated alike, differentiably (DiffAugment, Zhao et al., NeurIPS 2020).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor


def resize_shorter_side(height: int, width: int, short: int) -> tuple[int, int]:
    """Size (H, W) scaled so that min(H, W) = short, keeping the aspect ratio."""
    scale = short / min(height, width)
    return max(short, round(height * scale)), max(short, round(width * scale))


def random_crop_offsets(height: int, width: int, crop: int, generator: torch.Generator | None) -> tuple[int, int]:
    """Draw the top-left corner (top, left) of a ``crop`` x ``crop`` window inside a ``height`` x ``width`` image.

    Raises:
        ValueError: the image is smaller than the crop.
    """
    if height < crop or width < crop:
        raise ValueError(f"cannot crop {crop}x{crop} from a {height}x{width} image; lower the crop size")
    top = int(torch.randint(0, height - crop + 1, (1,), generator=generator))
    left = int(torch.randint(0, width - crop + 1, (1,), generator=generator))
    return top, left


def random_crop_windows(count: int, height: int, width: int, short_side: int, crop: int,
                        generator: torch.Generator | None = None) -> tuple[tuple[int, int], Tensor]:
    """Crops of ``count`` images resized to ``short_side``: the size (H', W') and (count, 2) int64 (top, left)."""
    size = resize_shorter_side(height, width, short_side)
    return size, torch.tensor([random_crop_offsets(*size, crop, generator) for _ in range(count)])


def crop_photos(images: Tensor, size: tuple[int, int], offsets: Tensor, crop: int) -> Tensor:
    """Resize photos (bilinear, antialiased) to ``size`` and crop each at its ``offsets`` row: (B, 3, crop, crop)."""
    resized = _resize_real(images, size)
    return torch.stack([resized[b, :, top:top + crop, left:left + crop]
                        for b, (top, left) in enumerate(offsets.tolist())])


def centre_crop_photos(images: Tensor, short_side: int, crop: int) -> Tensor:
    """Resize photos (B, 3, H, W) so that their short side is ``short_side``, then crop the centre: (B, 3, crop, crop).

    The photos as training shows them, without the random jitter and offset.
    """
    size = resize_shorter_side(images.shape[-2], images.shape[-1], short_side)
    offsets = torch.tensor([[(size[0] - crop) // 2, (size[1] - crop) // 2]]).expand(images.shape[0], 2)
    return crop_photos(images, size, offsets, crop)


def _resize_sim(uv: Tensor, label: Tensor, size: tuple[int, int]) -> tuple[Tensor, Tensor]:
    uv = F.interpolate(uv, size=size, mode="nearest")
    return uv, F.interpolate(label[:, None].float(), size=size, mode="nearest")[:, 0].long()


def _resize_real(images: Tensor, size: tuple[int, int]) -> Tensor:
    return F.interpolate(images, size=size, mode="bilinear", align_corners=False, antialias=True)


def _crops(images: list[Tensor], size: tuple[int, int], crop: int, generator: torch.Generator | None) -> list[Tensor]:
    """One random crop per batch item, the same for every tensor of ``images`` (each (B, ..., H, W))."""
    out = [[] for _ in images]
    for b in range(images[0].shape[0]):
        top, left = random_crop_offsets(*size, crop, generator)
        for tensor, crops in zip(images, out, strict=True):
            crops.append(tensor[b, ..., top:top + crop, left:left + crop])
    return [torch.stack(crops) for crops in out]


def augment_sim(uv: Tensor, label: Tensor, short_side: int, crop: int,
                generator: torch.Generator | None = None) -> tuple[Tensor, Tensor]:
    """Resize (nearest) and crop a G-buffer batch, one random crop per image.

    Args:
        uv: (B, 2, H, W) float UVs in [0, 1].
        label: (B, H, W) int64 label ids.
        short_side: target of the shorter side before cropping.
        crop: square crop size.
        generator: random stream of the crop offsets (None: torch's global one).

    Returns:
        (B, 2, crop, crop) UVs and (B, crop, crop) labels.
    """
    size = resize_shorter_side(uv.shape[-2], uv.shape[-1], short_side)
    uv, label = _crops(list(_resize_sim(uv, label, size)), size, crop, generator)
    return uv, label


def augment_paired(uv: Tensor, label: Tensor, images: Tensor, short_side: int, crop: int,
                   generator: torch.Generator | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """``augment_sim`` and ``crop_photos`` with one resize and one crop per pair, so the pairs stay aligned.

    Args:
        uv: (B, 2, H, W) float UVs in [0, 1].
        label: (B, H, W) int64 label ids.
        images: (B, 3, H, W) float, the photos of the same frames.
        short_side: target of the shorter side before cropping.
        crop: square crop size.
        generator: random stream of the crop offsets (None: torch's global one).

    Returns:
        (B, 2, crop, crop) UVs, (B, crop, crop) labels and (B, 3, crop, crop) photos.
    """
    if images.shape[-2:] != uv.shape[-2:]:
        raise ValueError(f"paired frames differ in size: UVL {tuple(uv.shape[-2:])}, photo {tuple(images.shape[-2:])}")
    size = resize_shorter_side(uv.shape[-2], uv.shape[-1], short_side)
    uv, label, images = _crops([*_resize_sim(uv, label, size), _resize_real(images, size)], size, crop, generator)
    return uv, label, images


#: Augmentations ``diff_augment`` knows, in the order it applies them.
DIFF_AUGMENTATIONS = ("translation", "cutout")


def diff_augment(images: Tensor, policy: Sequence[str], translation: float = 0.125, cutout: float = 0.5) -> Tensor:
    """Randomly shift and cut out each image, differentiably, with its own draw per image.

    ``translation`` moves an image by a whole number of pixels, up to ``translation`` of its side in each
    direction, filling with 0 (mid-grey in [-1, 1]); ``cutout`` sets a square of ``cutout`` of the side, placed
    anywhere (partly outside the image too), to 0. Gradients reach every pixel that stays visible.

    Args:
        images: (B, C, H, W) float.
        policy: names from ``DIFF_AUGMENTATIONS``; empty returns ``images`` itself.
        translation: largest shift as a fraction of the side.
        cutout: side of the cut-out square as a fraction of the image side.

    Returns:
        (B, C, H, W), the same dtype.

    Raises:
        ValueError: an unknown name in ``policy``.
    """
    check_diff_augment_policy(policy)
    if "translation" in policy:
        images = _translate(images, translation)
    if "cutout" in policy:
        images = _cut_out(images, cutout)
    return images


def check_diff_augment_policy(policy: Sequence[str]) -> None:
    """Raise ValueError naming any entry of ``policy`` that is not in ``DIFF_AUGMENTATIONS``."""
    unknown = set(policy) - set(DIFF_AUGMENTATIONS)
    if unknown:
        raise ValueError(f"unknown discriminator augmentation(s) {sorted(unknown)}; known: {DIFF_AUGMENTATIONS}")


def _translate(images: Tensor, fraction: float) -> Tensor:
    b, c, h, w = images.shape
    rows, cols = _shifted_indices(b, h, fraction, images.device), _shifted_indices(b, w, fraction, images.device)
    rows, cols = rows[:, :, None], cols[:, None, :]
    inside = ((rows >= 0) & (rows < h) & (cols >= 0) & (cols < w))[:, None]  # (B, 1, H, W)
    source = (rows.clamp(0, h - 1) * w + cols.clamp(0, w - 1)).flatten(1)  # (B, H*W) flat source pixel
    moved = images.flatten(2).gather(2, source[:, None].expand(b, c, h * w)).view(b, c, h, w)
    return moved * inside


def _shifted_indices(batch: int, side: int, fraction: float, device: torch.device) -> Tensor:
    """(B, side) source index of each output row (or column): i - shift, one shift in [-s, s] per image."""
    s = int(side * fraction)
    shift = torch.randint(-s, s + 1, (batch, 1), device=device)
    return torch.arange(side, device=device)[None] - shift


def _cut_out(images: Tensor, fraction: float) -> Tensor:
    b, _, h, w = images.shape
    size_h, size_w = int(h * fraction + 0.5), int(w * fraction + 0.5)
    top = torch.randint(0, h + 1, (b, 1, 1), device=images.device) - size_h // 2
    left = torch.randint(0, w + 1, (b, 1, 1), device=images.device) - size_w // 2
    rows = torch.arange(h, device=images.device)[None, :, None]
    cols = torch.arange(w, device=images.device)[None, None, :]
    hole = (rows >= top) & (rows < top + size_h) & (cols >= left) & (cols < left + size_w)  # (B, H, W)
    return images * (~hole)[:, None].to(images.dtype)
