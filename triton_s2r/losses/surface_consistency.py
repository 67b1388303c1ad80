"""Unprojection ("surface") consistency ℓUC (paper §3.3, appendix §A.2; docs/method.md §4.3, §8.5).

There is no second camera: the "views" are the other images of the batch. Each translated image is
splatted into its labels' D×D UV grids, and ℓUC penalises how much a texel's colour differs between the
images that see it:

1. **Splat.** Every non-void pixel adds its colour to the 4 texels around its (u, v) in its label's grid,
   with bilinear weights (``texture_space.unproject_to_texels``: rows = u, columns = v, texel centres at
   (i + 0.5) / D, the sampling convention of the textures), accumulating colour and weight sums.
2. **Per-image texel mean** ω[n, l, c, t] = colour sum / weight sum, with w[n, l, t] the weight sum.
3. **Optional colour normalisation** (reference code, not the paper): ω / (‖ω‖₂ + ε_c), judging by hue
   more than brightness as ε_c → 0. The reference normalised the [-1, 1] colours themselves, so it is blind
   to brightness only well away from mid-grey; with an offset o = 1, (ω + o) / (‖ω + o‖₂ + ε_c) normalises
   the [0, 2] colour instead and ignores any per-view scaling of brightness (shading, shadows).
4. **Weighted std across the batch** per (label, channel, texel): mean = Σ_n w·ω / Σ_n w,
   var = Σ_n w·(ω - mean)² / Σ_n w, std = sqrt(var + ε) - sqrt(ε) (finite gradient at var = 0,
   and exactly 0 when all images agree).
5. **Average over valid texels**, those seen by at least ``min_views`` (≥ 2) images, and channels.
   The reference averaged over all L·3·D² entries, so unseen texels diluted the loss, and its
   sqrt(var) had an infinite gradient where all views agreed.

``surface_chroma_consistency_loss`` is ℓUC on the brightness-normalised colour (offset 1, ε_c = 0.1): it ties
each texel's hue across views and leaves its shading free; weighted beside ℓUC, it is a consistency prior that
real shading does not break (docs/lab/results-2026-11-26.md measures both).

``blur_sigma`` > 0 blurs each label's pixels within the label before the splat (``blur_within_labels``): a
surface with detail finer than a pixel, mapped consistently, still differs between two views where its pixels
sample it differently (antialiasing under motion), and ℓUC charges that to the detail, so that blurring a
translation lowers it (``benchmarks/consistency_floor.py`` measures both, docs/method.md §4.3.3). The blur leaves
the views' colour at the scale of a few pixels to agree, and detail below it free.

Void pixels (label 0) are excluded. Gradients flow into the image only; uv and label are data.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from triton_s2r.models.texture_space import unproject_to_texels

#: ε_c of ``surface_chroma_consistency_loss`` (1 was measured worse: docs/lab/results-2026-11-26.md).
CHROMA_NORMALIZATION_EPS = 0.1


def blur_within_labels(image: Tensor, label: Tensor, num_labels: int, sigma: float) -> Tensor:
    """A Gaussian blur of each label's pixels over that label's pixels only (a normalised convolution).

    A pixel's blurred colour is the Gaussian-weighted mean of the pixels of its own label around it, so the
    blur never mixes a surface with what lies beside it (which changes between views).

    Args:
        image: (B, C, H, W) float.
        label: (B, H, W) int64 in 0..K.
        num_labels: K.
        sigma: σ of the Gaussian, pixels, > 0 (taps out to 3σ).

    Returns:
        (B, C, H, W) float32.
    """
    batch, channels, height, width = image.shape
    radius = max(1, round(3 * sigma))
    offsets = torch.arange(-radius, radius + 1, device=image.device, dtype=torch.float32)
    profile = torch.exp(-0.5 * (offsets / sigma) ** 2)
    profile = profile / profile.sum()
    # (B, K+1, 1, H, W); a comparison rather than F.one_hot, whose range check would wait for the GPU
    ids = torch.arange(num_labels + 1, device=label.device).view(1, -1, 1, 1)
    member = (label.unsqueeze(1) == ids).float().unsqueeze(2)
    stacked = torch.cat([image.float().unsqueeze(1) * member, member], dim=2).flatten(1, 2)  # (B, (K+1)(C+1), H, W)
    groups = stacked.shape[1]
    for kernel, padding in ((profile.view(1, 1, 1, -1), (0, radius)), (profile.view(1, 1, -1, 1), (radius, 0))):
        stacked = F.conv2d(stacked, kernel.expand(groups, 1, *kernel.shape[2:]), padding=padding, groups=groups)
    stacked = stacked.view(batch, num_labels + 1, channels + 1, height, width)
    mean = stacked[:, :, :channels] / stacked[:, :, channels:].clamp(min=1e-6)
    return (mean * member).sum(dim=1)


def surface_consistency_loss(
    image: Tensor,
    uv: Tensor,
    label: Tensor,
    num_labels: int,
    grid_size: int = 128,
    eps: float = 1e-8,
    color_normalization_eps: float | None = None,
    color_normalization_offset: float = 0.0,
    min_views: int = 2,
    sim_clip_frames: int = 1,
    blur_sigma: float = 0.0,
) -> Tensor:
    """ℓUC: weighted std of each texel's colour across the images of the batch.

    Args:
        image: (B, C, H, W) float, the translation x_ab in [-1, 1]; needs B ≥ 2 to be non-zero.
        uv: (B, 2, H, W) float; channel 0 = u, 1 = v, in [0, 1].
        label: (B, H, W) int64; 0 = void (excluded), 1..K = objects.
        num_labels: K.
        grid_size: D, texels per side of each label's UV grid. Reference: 128.
        eps: ε in sqrt(var + ε) - sqrt(ε).
        color_normalization_eps: if set, divide each per-image texel colour by (its L2 norm + this)
            before the statistics (the reference code used 0.1; the paper has no such step). None = off.
        color_normalization_offset: o, added to the colours before that normalisation, so unused without
            ``color_normalization_eps`` (reference 0; 1 turns [-1, 1] into [0, 2], so the normalised colour
            no longer depends on per-view brightness).
        min_views: texels seen (with non-zero splat weight) by fewer images are ignored; at least 2.
        sim_clip_frames: N > 1: the batch is B / N clips of N consecutive sim frames (neighbouring views,
            ``data.sim_clip_frames``), and ℓUC compares only the images of one clip: the mean over clips of
            each clip's ℓUC. Slow view-dependent change (shading, shadows) then costs little, frame-to-frame
            flicker as much as before. 1: the whole batch (paper).
        blur_sigma: σ in pixels of ``blur_within_labels`` before the splat; 0: none (paper).

    Returns:
        Scalar float32 ≥ 0, unweighted: the mean std over channels and valid texels; 0 (still attached
        to the graph) when no texel is seen by ``min_views`` images.
    """
    if min_views < 2:
        raise ValueError(f"min_views must be >= 2 (a std needs two views), got {min_views}")
    if blur_sigma > 0:
        image = blur_within_labels(image, label, num_labels, blur_sigma)
    n = sim_clip_frames
    if n > 1:
        if image.shape[0] % n:
            raise ValueError(f"a batch of {image.shape[0]} images does not split into clips of {n}")
        return torch.stack([
            surface_consistency_loss(image[k:k + n], uv[k:k + n], label[k:k + n], num_labels, grid_size, eps,
                                     color_normalization_eps, color_normalization_offset, min_views)
            for k in range(0, image.shape[0], n)
        ]).mean()
    texel_mean, texel_weight = unproject_to_texels(image, uv, label, num_labels, grid_size)
    if color_normalization_eps is not None:
        shifted = texel_mean + color_normalization_offset
        texel_mean = shifted / (shifted.norm(dim=2, keepdim=True) + color_normalization_eps)

    weight = texel_weight.unsqueeze(2)  # (B, K, 1, D, D)
    total = weight.sum(dim=0)  # (K, 1, D, D)
    views = (texel_weight > 0).sum(dim=0)  # (K, D, D)
    valid = views >= min_views
    safe_total = torch.where(total > 0, total, torch.ones_like(total))
    mean = (weight * texel_mean).sum(dim=0) / safe_total  # (K, C, D, D)
    variance = (weight * (texel_mean - mean) ** 2).sum(dim=0) / safe_total
    std = torch.sqrt(variance + eps) - eps**0.5

    channels = texel_mean.shape[2]
    valid_count = valid.sum() * channels
    # Masking by multiplication keeps the graph connected even when nothing is valid.
    std_sum = (std * valid.unsqueeze(1).to(std.dtype)).sum()
    return std_sum / valid_count.clamp(min=1)


def surface_chroma_consistency_loss(
    image: Tensor, uv: Tensor, label: Tensor, num_labels: int, grid_size: int = 128, blur_sigma: float = 0.0
) -> Tensor:
    """ℓUC of the chromaticity: blind to per-view brightness (shading, shadows), not to hue.

    ``surface_consistency_loss`` with the colour normalisation on the [0, 2] colour (offset 1, ε_c =
    ``CHROMA_NORMALIZATION_EPS``); arguments and result as there.
    """
    return surface_consistency_loss(image, uv, label, num_labels, grid_size,
                                    color_normalization_eps=CHROMA_NORMALIZATION_EPS, color_normalization_offset=1.0,
                                    blur_sigma=blur_sigma)
