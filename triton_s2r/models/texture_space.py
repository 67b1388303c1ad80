"""Texture-space conventions shared by the textures, ℓUC and the consistency metrics (docs/method.md §2.3, §8.3).

Every per-label texture raster in triton_s2r, and the per-label ℓUC grid, is laid out as
``(..., R_rows, R_cols)`` with

* **rows indexed by u** and **columns indexed by v** (the reference TRITON order: ``row = u*R``,
  ``col = v*R``), and
* **texel centres at (i + 0.5) / R** (``align_corners=False`` in ``grid_sample`` terms): texel ``i``
  covers ``[i/R, (i+1)/R)``; coordinates are clamped to ``[0, 1]`` and taps beyond the edge are clamped
  to the edge texel (``padding_mode="border"``).

Bilinear sampling (``sample_label_textures``) and bilinear splatting (the ℓUC unprojection) use the same
``bilinear_taps``, so a texel that is sampled with weight w receives splatted colour with weight w.
"""

from __future__ import annotations

import torch
from torch import Tensor


def bilinear_taps(coord: Tensor, size: int) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Two neighbouring texel indices and their linear weights along one texture axis.

    Args:
        coord: any shape, float; texture coordinate, clamped to [0, 1].
        size: number of texels along the axis.

    Returns:
        ``(i0, i1, w0, w1)``: int64 indices in [0, size - 1] and float weights with ``w0 + w1 = 1``,
        each of ``coord``'s shape. Near the border both indices may name the edge texel.
    """
    position = coord.clamp(0.0, 1.0) * size - 0.5  # texel-centre coordinates
    lower = torch.floor(position)
    w1 = position - lower
    i0 = lower.long()
    i1 = (i0 + 1).clamp(max=size - 1)
    return i0.clamp(min=0), i1, 1.0 - w1, w1


def texel_centers(resolution: int, device: torch.device | str | None = None) -> Tensor:
    """UV coordinates of the centres of a square texture raster.

    Args:
        resolution: R, texels per side.
        device: device of the result.

    Returns:
        (R, R, 2) float32; ``[row, col] = (u, v) = ((row + 0.5) / R, (col + 0.5) / R)``.
    """
    axis = (torch.arange(resolution, device=device, dtype=torch.float32) + 0.5) / resolution
    u, v = torch.meshgrid(axis, axis, indexing="ij")
    return torch.stack([u, v], dim=-1)


def sample_label_textures(textures: Tensor, uv: Tensor, label: Tensor) -> Tensor:
    """Bilinearly sample each pixel's own label texture at its UV; void pixels get zeros.

    All labels are sampled at once by gathering from the flattened (label, row, col) table, so no
    weight ever leaks between the textures of neighbouring labels (as it would in an atlas or a 3D
    ``grid_sample``).

    Args:
        textures: (K, C, R, R) float; texture of label l is ``textures[l - 1]``, rows = u, cols = v.
        uv: (B, 2, H, W) float; channel 0 = u, 1 = v, in [0, 1] (clamped).
        label: (B, H, W) int64; 0 = void, 1..K = objects.

    Returns:
        (B, C, H, W), the dtype of ``textures``; zeros where ``label == 0``.
    """
    num_labels, channels, rows, cols = textures.shape
    table = textures.permute(0, 2, 3, 1).reshape(num_labels * rows * cols, channels)
    base = (label.clamp(min=1) - 1) * (rows * cols)  # (B, H, W)
    r0, r1, wr0, wr1 = bilinear_taps(uv[:, 0], rows)
    c0, c1, wc0, wc1 = bilinear_taps(uv[:, 1], cols)
    out = (
        table[base + r0 * cols + c0] * (wr0 * wc0).unsqueeze(-1)
        + table[base + r0 * cols + c1] * (wr0 * wc1).unsqueeze(-1)
        + table[base + r1 * cols + c0] * (wr1 * wc0).unsqueeze(-1)
        + table[base + r1 * cols + c1] * (wr1 * wc1).unsqueeze(-1)
    )  # (B, H, W, C)
    out = out * (label > 0).unsqueeze(-1).to(out.dtype)
    return out.permute(0, 3, 1, 2).contiguous()


def check_labels(label: Tensor, num_labels: int, check_range: bool = True) -> None:
    """Raise if ``label`` is not an int64 map with values in 0..num_labels.

    Args:
        label: (B, H, W) label map; 0 = void.
        num_labels: K, the number of object labels (void excluded).
        check_range: also check the values (one device synchronisation on a GPU). The modules skip it for
            CUDA tensors, whose labels are checked where they enter: the dataset readers, the renderers
            (labels come from the scene) and ``Translator``.
    """
    if label.dtype != torch.int64:
        raise TypeError(f"label must be int64 (0 = void, 1..K = objects), got {label.dtype}")
    if not check_range or label.numel() == 0 or torch.compiler.is_compiling():  # no graph break when compiled
        return
    low, high = (int(value) for value in torch.aminmax(label))
    if low < 0 or high > num_labels:
        raise ValueError(
            f"label values must lie in 0..{num_labels} (0 = void); got range [{low}, {high}]. "
            f"Is num_labels={num_labels} right?"
        )


def unproject_to_texels(
    image: Tensor, uv: Tensor, label: Tensor, num_labels: int, grid_size: int = 128
) -> tuple[Tensor, Tensor]:
    """Bilinearly splat each image into per-label UV grids (the splat of ℓUC, ``losses.surface_consistency``).

    Vectorised with ``index_add``; no loops over pixels, labels or images.

    Args:
        image: (B, C, H, W) float, e.g. a translation x_ab in [-1, 1].
        uv: (B, 2, H, W) float; channel 0 = u, 1 = v, in [0, 1] (clamped).
        label: (B, H, W) int64; 0 = void (ignored), 1..K = objects.
        num_labels: K.
        grid_size: D, texels per side of each label's grid. Reference: 128.

    Returns:
        ``(texel_mean, texel_weight)``: (B, K, C, D, D) float32 per-image weighted mean colour (0 where
        unseen) and (B, K, D, D) float32 splatted weight; ``[n, l - 1, :, row, col]`` is label l at
        ``(u, v) ≈ ((row + 0.5) / D, (col + 0.5) / D)``. The weight-averaged ``texel_mean`` over the batch
        is the "recovered texture".
    """
    check_labels(label, num_labels, check_range=not label.is_cuda)
    batch, channels = image.shape[:2]
    # float32 accumulation: index_add in bf16 would round the sums of many pixels. Void pixels are splatted
    # with weight 0 into label 1's grid rather than filtered out, which would cost a device synchronisation.
    colours = image.float().permute(0, 2, 3, 1).reshape(-1, channels)  # (B*H*W, C)
    flat_label = label.reshape(-1)
    visible = flat_label > 0
    u = torch.where(visible, uv[:, 0].reshape(-1).float(), 0.0)  # void UVs may hold anything
    v = torch.where(visible, uv[:, 1].reshape(-1).float(), 0.0)
    image_index = torch.arange(batch, device=label.device).repeat_interleave(label[0].numel())
    grid_base = ((image_index * num_labels + flat_label.clamp(min=1) - 1) * grid_size) * grid_size

    r0, r1, wr0, wr1 = bilinear_taps(u, grid_size)
    c0, c1, wc0, wc1 = bilinear_taps(v, grid_size)
    index = torch.cat([grid_base + r * grid_size + c for r, c in ((r0, c0), (r0, c1), (r1, c0), (r1, c1))])
    weight = torch.cat([wr0 * wc0, wr0 * wc1, wr1 * wc0, wr1 * wc1]) * visible.float().repeat(4)  # (4N,)

    num_texels = batch * num_labels * grid_size * grid_size
    weighted_colours = colours.repeat(4, 1) * weight[:, None]  # (4N, C), tap-major like ``index``
    colour_sum = colours.new_zeros(num_texels, channels).index_add(0, index, weighted_colours)
    weight_sum = weight.new_zeros(num_texels).index_add(0, index, weight)
    seen = weight_sum > 0
    texel_mean = colour_sum / torch.where(seen, weight_sum, torch.ones_like(weight_sum))[:, None]

    texel_mean = texel_mean.view(batch, num_labels, grid_size, grid_size, channels).permute(0, 1, 4, 2, 3)
    return texel_mean, weight_sum.view(batch, num_labels, grid_size, grid_size)
