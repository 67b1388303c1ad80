"""HaarPSI, the Haar wavelet-based perceptual similarity index, needing no network weights.

Reisenhofer, Bosse, Kutyniok and Wiegand, "A Haar wavelet-based perceptual similarity index for image
quality assessment", Signal Processing: Image Communication 61 (2018) 33-43, §3 (colour version, eq. 10-12).

Written here from the paper because the maintained PyTorch packages that ship it (``piq``, ``piqa``) import
torchvision, which does not install next to the project's pinned CPU torch build.

Why it is here: PSNR rewards blur (a pale average of the possible textures scores well), while HaarPSI
compares local edge magnitudes at the two finest Haar scales, weighted by how much structure the coarser
third scale finds there; a blurred texture loses those edges and the score drops. Adding a constant grey
to an image changes neither a Haar high-pass response nor the I and Q chroma channels, so such an offset
keeps HaarPSI at exactly 1 while its PSNR falls.

Steps, for RGB images scaled to [0, 255] as in the paper:

1. RGB -> YIQ (NTSC), then a 2 x 2 mean filter and subsampling by 2 (the paper's pre-processing).
2. Haar filters of scale j = 1, 2, 3: 2^j x 2^j kernels with entries ±2^-j, one changing sign along x
   (k = 1) and one along y (k = 2); borders are padded by replicating the edge pixels, so the image
   border itself is no edge.
3. Local similarity S(a, b) = (2ab + C) / (a² + b² + C) of response magnitudes; per orientation
   HS_k = l(½ Σ_{j=1,2} S(|g_jk * Y1|, |g_jk * Y2|)), with the logistic l(x) = 1 / (1 + exp(-αx));
   chroma: HS_3 = l(½ (S(|m * I1|, |m * I2|) + S(|m * Q1|, |m * Q2|))), m the 2 x 2 mean filter.
4. Weights W_k = max(|g_3k * Y1|, |g_3k * Y2|) for k = 1, 2 and W_3 = (W_1 + W_2) / 2.
5. HaarPSI = (l⁻¹(Σ_x Σ_k HS_k W_k / Σ_x Σ_k W_k))², in (0, 1], 1 for images with the same Haar
   structure (identical images in particular). C = 30 and α = 4.2 as in the paper.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

#: Paper constants for images in [0, 255]: C stabilises S, α is the logistic's slope.
C = 30.0
ALPHA = 4.2
#: Mean weight (in [0, 255] units) below which an image pair counts as flat: far above float64 rounding, far below
#: any visible structure.
FLAT_WEIGHT = 1e-9

# NTSC RGB -> YIQ; the I and Q rows sum to 0, so a grey offset changes only Y.
_YIQ = torch.tensor([[0.299, 0.587, 0.114], [0.596, -0.274, -0.322], [0.211, -0.523, 0.312]], dtype=torch.float64)


def _haar_kernels(scale: int, dtype: torch.dtype, device: torch.device) -> Tensor:
    """(2, 1, 2^j, 2^j): entries ±2^-j, sign changing along x (first) and along y (second)."""
    size = 2**scale
    sign = torch.ones(size, size, dtype=dtype, device=device)
    sign[:, : size // 2] = -1
    return torch.stack([sign, sign.T]).unsqueeze(1) * 2.0**-scale


def _filter(image: Tensor, kernel: Tensor) -> Tensor:
    """``image`` (N, 1, H, W) convolved with ``kernel`` (O, 1, n, n), output (N, O, H, W), edges replicated."""
    n = kernel.shape[-1]
    before, after = n // 2, n - 1 - n // 2  # "same" size for even kernels
    return F.conv2d(F.pad(image, (before, after, before, after), mode="replicate"), kernel)


def _similarity(a: Tensor, b: Tensor) -> Tensor:
    return (2 * a * b + C) / (a * a + b * b + C)


def _logistic(x: Tensor) -> Tensor:
    return torch.sigmoid(ALPHA * x)


def haarpsi(pred: Tensor, target: Tensor, mask: Tensor | None = None, reduction: str = "mean") -> Tensor:
    """HaarPSI of each image pair (higher is better, 1 for identical images), colour version.

    With a mask only the masked pixels of ``pred`` count, in two ways: outside the mask ``pred`` is replaced
    by ``target`` (so the filters that straddle the mask edge see the same surroundings in both images, and
    no artificial edge is made), and the pooling of step 5 weights each subsampled position by the fraction
    of its 2 x 2 input pixels inside the mask. With an all-True mask the result equals the unmasked one.

    Args:
        pred: (B, 3, H, W) float RGB in [0, 1], e.g. translated frames; H, W >= 2.
        target: (B, 3, H, W) float RGB in [0, 1], the paired real frames.
        mask: (B, H, W) bool pixels to score (e.g. ``metrics.object_mask``); None = all.
        reduction: ``"mean"`` over the batch or ``"none"`` for per-image values.

    Returns:
        float32 in (0, 1]: 0-dim for ``"mean"``, (B,) for ``"none"``. Computed in float64.

    Raises:
        ValueError: shapes differ or are not RGB, images smaller than 2 x 2, an image with an empty mask, an
            image pair with no structure at all at the third Haar scale (both flat, where HaarPSI is
            undefined), or an unknown reduction.
    """
    if pred.ndim != 4 or pred.shape != target.shape or pred.shape[1] != 3:
        raise ValueError(f"haarpsi: pred and target must both be (B, 3, H, W) RGB; got {tuple(pred.shape)} and "
                         f"{tuple(target.shape)}")
    b, _, h, w = pred.shape
    if h < 2 or w < 2:
        raise ValueError(f"haarpsi: images of {h}x{w} pixels are too small (the first step subsamples by 2)")
    if reduction not in ("mean", "none"):
        raise ValueError(f"unknown reduction {reduction!r}; choose 'mean' or 'none'")
    x, y = pred.double() * 255, target.double() * 255
    pool = torch.ones(b, 1, h // 2, w // 2, dtype=torch.float64, device=pred.device)
    if mask is not None:
        if mask.shape != (b, h, w) or mask.dtype != torch.bool:
            raise ValueError(f"haarpsi: mask must be (B, H, W) = {(b, h, w)} bool; got {tuple(mask.shape)} "
                             f"{mask.dtype}")
        empty = torch.nonzero(~mask.flatten(1).any(dim=1)).flatten().tolist()
        if empty:
            raise ValueError(f"haarpsi: mask is empty in images {empty}; drop those frames before scoring")
        x = torch.where(mask.unsqueeze(1), x, y)
        pool = F.avg_pool2d(mask.unsqueeze(1).double(), 2)  # (B, 1, H/2, W/2): fraction of masked pixels

    # 1. YIQ, 2 x 2 mean and subsampling; both images in one batch of 2B.
    yiq = torch.einsum("ck,nkhw->nchw", _YIQ.to(x.device), torch.cat([x, y]))
    yiq = F.avg_pool2d(yiq, 2)  # (2B, 3, H/2, W/2)
    luma, chroma = yiq[:, :1], yiq[:, 1:]

    # 2-3. Luma similarity at scales 1 and 2, per orientation; 4. weights from scale 3.
    magnitude = [_filter(luma, _haar_kernels(j, luma.dtype, luma.device)).abs() for j in (1, 2, 3)]  # (2B, 2, h, w)
    similarity_1, similarity_2 = (_similarity(m[:b], m[b:]) for m in magnitude[:2])
    mean_similarity = (similarity_1 + similarity_2) / 2
    weights = torch.maximum(magnitude[2][:b], magnitude[2][b:])  # (B, 2, h, w)
    # Chroma: a third "orientation" from the 2 x 2 mean of |I| and |Q|.
    mean_kernel = torch.full((1, 1, 2, 2), 0.25, dtype=chroma.dtype, device=chroma.device)
    chroma = _filter(chroma.reshape(-1, 1, *chroma.shape[2:]), mean_kernel).abs().reshape(chroma.shape)
    chroma_similarity = (_similarity(chroma[:b, :1], chroma[b:, :1]) + _similarity(chroma[:b, 1:], chroma[b:, 1:])) / 2
    local = _logistic(torch.cat([mean_similarity, chroma_similarity], dim=1))  # (B, 3, h, w): HS_1..3
    weights = torch.cat([weights, weights.mean(dim=1, keepdim=True)], dim=1) * pool  # (B, 3, h, w): W_1..3

    # 5. Weighted pooling, back through the logistic, squared.
    total = weights.flatten(1).sum(dim=1)
    # A constant image is not exactly 0 here: the colour transform's rounding leaves about 1e-14 per weight.
    flat = torch.nonzero(total <= FLAT_WEIGHT * weights[0].numel()).flatten().tolist()
    if flat:
        raise ValueError(f"haarpsi: images {flat} and their targets are flat (no Haar structure at scale 3), "
                         "where HaarPSI is undefined")
    pooled = (local * weights).flatten(1).sum(dim=1) / total  # in (l(0), l(1)]
    value = (torch.log(pooled / (1 - pooled)) / ALPHA) ** 2
    value = value.float()
    return value.mean() if reduction == "mean" else value
