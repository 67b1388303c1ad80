"""Reconstruction criterion Ω and MS-SSIM (paper §3.2 ℓrec, ℓcon, ℓcyc; docs/method.md §4.1, §8.7).

The reference uses Ω(x, y) = mean|x - y| - MS-SSIM(x, y) for every reconstruction-type term (the paper
writes L2 - MS-SSIM). Here Ω is one of

* ``"l1"``: mean|x - y|;  ``"l2"``: mean (x - y)²;
* ``"l1_ms_ssim"`` (reference) / ``"l2_ms_ssim"`` (paper): the above plus ``1 - MS-SSIM(x, y)``.

``1 - MS-SSIM`` differs from the reference's ``-MS-SSIM`` by a constant, so gradients are the same and
identical images give 0. The MS-SSIM is torchmetrics' (its SSIM per level, ``ssim_and_contrast``, with the
Gaussian window applied faster on the CPU; the result equals its MS-SSIM, tested) with a **fixed** ``data_range``
(the reference guessed it from one argument), Gaussian window σ = 1.5 (11 taps), the standard level
weights, and the reference's ``normalize=True`` mapping s → (s + 1) / 2 per level (torchmetrics'
``normalize="simple"``), which keeps the product of powers real and positive. Unlike the reference it
raises the last level's SSIM to its own weight once (the reference's product applied it four times).

Small inputs (64² content codes, test images) cannot hold five levels of an 11-tap window; instead of
shrinking the window as the reference did, ``ms_ssim`` uses the most levels that fit and renormalises
their weights to sum to 1 (256² → 5 levels, 128² → 4, 64² → 3, 32² → 2).

Content reconstruction ``Ω(E_B(x_ab), E_A(x_a))`` and cycle ``Ω(G_A(E_B(x_ab)), x_a)`` are Ω of the matching
tensors and data ranges; the training step takes terms of one shape and range in one pass
(``reconstruction_losses``).
"""

from __future__ import annotations

import functools

import torch
from torch import Tensor
from torch.nn import functional as F

CRITERIA = ("l1", "l2", "l1_ms_ssim", "l2_ms_ssim")
MS_SSIM_BETAS = (0.0448, 0.2856, 0.3001, 0.2363, 0.1333)
_KERNEL_SIZE = 11  # the Gaussian window torchmetrics derives from sigma = 1.5


def ms_ssim_levels(height: int, width: int, max_levels: int = len(MS_SSIM_BETAS)) -> int:
    """Number of MS-SSIM levels that fit an image.

    A level fits when it passes torchmetrics' size check and the coarsest level is still larger than
    the window's reflect padding.

    Args:
        height: image height.
        width: image width.
        max_levels: upper bound, at most 5.

    Returns:
        Levels in 1..max_levels, or 0 when not even one level fits (side < 11).
    """
    side = min(height, width)
    levels = 0
    for n in range(1, min(max_levels, len(MS_SSIM_BETAS)) + 1):
        fits_check = side // max(1, n - 1) ** 2 > _KERNEL_SIZE - 1 and side >= 2**n
        fits_padding = side // 2 ** (n - 1) > _KERNEL_SIZE // 2
        if not (fits_check and fits_padding):
            break
        levels = n
    return levels


def _window_profile(dtype: torch.dtype, device: torch.device) -> Tensor:
    """(11,) SSIM's Gaussian profile, σ = 1.5, summing to 1."""
    offsets = torch.arange(_KERNEL_SIZE, dtype=dtype, device=device) - _KERNEL_SIZE // 2
    profile = torch.exp(-((offsets / 1.5) ** 2) / 2)
    return profile / profile.sum()


@functools.lru_cache(maxsize=64)
def _window_kernel(channels: int, dtype: torch.dtype, device: torch.device) -> Tensor:
    """(channels, 1, 11, 11) the depthwise convolution's weight: the outer product of the profile."""
    profile = _window_profile(dtype, device)
    return torch.outer(profile, profile).expand(channels, 1, _KERNEL_SIZE, _KERNEL_SIZE)


@functools.lru_cache(maxsize=64)
def _window_band(size: int, dtype: torch.dtype, device: torch.device) -> Tensor:
    """(size - 10, size): row i holds the profile at columns i..i+10."""
    rows = size - _KERNEL_SIZE + 1
    columns = torch.arange(rows, device=device)[:, None] + torch.arange(_KERNEL_SIZE, device=device)
    profile = _window_profile(dtype, device)
    return torch.zeros(rows, size, dtype=dtype, device=device).scatter_(1, columns, profile.expand(rows, _KERNEL_SIZE))


def _window_constant(builder, *key) -> Tensor:
    """``builder(*key)``, made once per key in eager code, where each call would launch about ten small kernels.

    A compiled graph builds its own, which Inductor folds. Made outside inference mode, so that a window first made
    by an evaluation can be saved for a later backward pass.
    """
    if torch.compiler.is_compiling():
        return builder.__wrapped__(*key)
    with torch.inference_mode(False), torch.no_grad():
        return builder(*key)


def gaussian_window(x: Tensor, banded: bool | None = None) -> Tensor:
    """SSIM's Gaussian window (σ = 1.5, 11 taps) over each channel of ``x``, without padding.

    Banded: as two products with banded matrices (one per axis), 3.5x faster forward and backward on the CPU than
    the depthwise 11x11 convolution that torchmetrics uses; the same values up to float rounding (the window is the
    outer product of its 1-D profile).

    Args:
        x: (N, C, H, W) float32, H and W >= 11.
        banded: banded products (True) or the convolution (False); None: banded on the CPU only (on an H200 the
            convolution is faster: docs/benchmarks.md).

    Returns:
        (N, C, H - 10, W - 10).
    """
    channels, height, width = x.shape[1:]
    if not (x.device.type == "cpu" if banded is None else banded):
        return F.conv2d(x, _window_constant(_window_kernel, channels, x.dtype, x.device), groups=channels)
    rows = _window_constant(_window_band, height, x.dtype, x.device)
    columns = _window_constant(_window_band, width, x.dtype, x.device)
    return rows @ x @ columns.T


def ssim_and_contrast(x: Tensor, y: Tensor, data_range: float) -> tuple[Tensor, Tensor]:
    """SSIM and contrast sensitivity per image, as torchmetrics' SSIM computes them (its MS-SSIM's levels).

    Gaussian window σ = 1.5 (``gaussian_window``), k1 = 0.01, k2 = 0.03, reflect padding by 5 pixels; the SSIM
    averages the whole padded map, the contrast sensitivity its interior, as torchmetrics does (equal values, tested
    against its MS-SSIM).

    Args:
        x: (B, C, H, W) float32, H and W > 5.
        y: same shape as ``x``.
        data_range: the inputs' value range.

    Returns:
        (B,) SSIM and (B,) contrast sensitivity.
    """
    c1, c2 = (0.01 * data_range) ** 2, (0.03 * data_range) ** 2
    pad = _KERNEL_SIZE // 2
    x, y = F.pad(x, (pad,) * 4, mode="reflect"), F.pad(y, (pad,) * 4, mode="reflect")
    means = gaussian_window(torch.cat((x, y, x * x, y * y, x * y))).split(x.shape[0])
    mean_x, mean_y, mean_xx, mean_yy, mean_xy = means
    mean_x2, mean_y2, mean_x_y = mean_x.pow(2), mean_y.pow(2), mean_x * mean_y
    variance_x = torch.clamp(mean_xx - mean_x2, min=0.0)
    variance_y = torch.clamp(mean_yy - mean_y2, min=0.0)
    upper = 2 * (mean_xy - mean_x_y) + c2
    lower = variance_x + variance_y + c2
    similarity = ((2 * mean_x_y + c1) * upper) / ((mean_x2 + mean_y2 + c1) * lower)
    contrast = (upper / lower)[..., pad:-pad, pad:-pad]
    return similarity.flatten(1).mean(1), contrast.flatten(1).mean(1)


def ms_ssim(x: Tensor, y: Tensor, data_range: float, max_levels: int = len(MS_SSIM_BETAS)) -> Tensor:
    """Multi-scale SSIM, channel by channel, averaged over the batch.

    Args and errors: those of ``ms_ssim_per_image``.

    Returns:
        Scalar float32 in [0, 1]; 1 for identical inputs.
    """
    return ms_ssim_per_image(x, y, data_range, max_levels).mean()


def ms_ssim_per_image(x: Tensor, y: Tensor, data_range: float, max_levels: int = len(MS_SSIM_BETAS)) -> Tensor:
    """Multi-scale SSIM of each image, channel by channel.

    Computed in float32 with autocast off (the variances of SSIM are cancellation-prone in bf16).

    Args:
        x: (B, C, H, W) float; any channel count (6-channel x_a, 8-channel content codes).
        y: same shape as ``x``.
        data_range: fixed value range of the inputs, e.g. 2.0 for images in [-1, 1].
        max_levels: at most this many levels (fewer for small inputs, see ``ms_ssim_levels``).

    Returns:
        (B,) float32 in [0, 1]; 1 for identical images.

    Raises:
        ValueError: if the images are smaller than 11 pixels on a side.
    """
    if x.shape != y.shape or x.ndim != 4:
        raise ValueError(
            f"ms_ssim expects two (B, C, H, W) tensors of one shape, got {x.shape} and {y.shape}"
        )
    levels = ms_ssim_levels(x.shape[-2], x.shape[-1], max_levels)
    if levels == 0:
        raise ValueError(
            f"MS-SSIM needs images of at least {_KERNEL_SIZE}x{_KERNEL_SIZE}, got {tuple(x.shape[-2:])}; "
            "use the 'l1' or 'l2' criterion for smaller inputs"
        )
    total = sum(MS_SSIM_BETAS[:levels])
    # torchmetrics' own MS-SSIM copies its level weights from the host at every call, which makes the GPU
    # wait; the same product over levels from the SSIM and contrast sensitivity keeps them Python floats.
    product = x.new_ones(x.shape[0], dtype=torch.float32)
    with torch.autocast(device_type=x.device.type, enabled=False):
        x, y = x.float(), y.float()
        for level in range(levels):
            if level:
                x, y = F.avg_pool2d(x, 2), F.avg_pool2d(y, 2)
            similarity, contrast = ssim_and_contrast(x, y, data_range)
            # contrast sensitivity at the finer levels, the full SSIM at the coarsest; (s + 1) / 2 per level
            value = similarity if level == levels - 1 else contrast
            product = product * ((value + 1) / 2) ** (MS_SSIM_BETAS[level] / total)
    return product


def reconstruction_loss(
    prediction: Tensor,
    target: Tensor,
    criterion: str = "l1_ms_ssim",
    data_range: float = 2.0,
    mask: Tensor | None = None,
) -> Tensor:
    """Ω(prediction, target) for within-domain, content, cycle and texture-reality terms.

    Args:
        prediction: (B, C, H, W) float.
        target: (B, C, H, W) float, same shape; not detached here (the reference lets gradients reach
            the texture through x_a targets).
        criterion: one of ``CRITERIA``; reference "l1_ms_ssim".
        data_range: value range for MS-SSIM: 2 for images in [-1, 1]; for x_a channels 0-2 with
            multipliers (m_h, m_t) it is 2·(m_h + m_t).
        mask: optional (B, H, W) or (B, 1, H, W) bool/float, 1 where pixels count. L1/L2 average over
            the masked pixels only; MS-SSIM compares ``prediction·mask`` with ``target·mask``, so masked-out
            pixels agree exactly and pass no gradient.

    Returns:
        Scalar float32, unweighted; 0 for identical inputs; L1/L2 parts in [0, ∞), MS-SSIM part in [0, 1].
    """
    if mask is None:
        return reconstruction_losses(prediction, target, 1, criterion, data_range)[0]
    _check_pair(prediction, target, criterion)
    prediction, target = prediction.float(), target.float()
    error = _pixel_error(prediction, target, criterion)
    weight = (mask if mask.ndim == 4 else mask.unsqueeze(1)).to(error.dtype)
    covered = weight.sum() * error.shape[1]
    loss = (error * weight).sum() / covered.clamp(min=1.0)
    if criterion.endswith("ms_ssim"):
        loss = loss + (1.0 - ms_ssim(prediction * weight, target * weight, data_range))
    return loss


def reconstruction_losses(
    prediction: Tensor,
    target: Tensor,
    parts: int,
    criterion: str = "l1_ms_ssim",
    data_range: float = 2.0,
) -> Tensor:
    """Ω of each of ``parts`` equal slices of a batch, in one pass.

    The values of ``parts`` unmasked ``reconstruction_loss`` calls, one per slice (up to float rounding), from half
    as many or fewer kernel launches: the training step compares its reconstructions and cycles this way.

    Args:
        prediction: (P·B, C, H, W) float: P = ``parts`` batches of B images, concatenated.
        target: (P·B, C, H, W) float, the targets in the same order.
        parts: P, dividing the batch size.
        criterion: one of ``CRITERIA``.
        data_range: value range for MS-SSIM, as for ``reconstruction_loss``.

    Returns:
        (P,) float32, unweighted; 0 where a slice's prediction equals its target.
    """
    _check_pair(prediction, target, criterion)
    if parts < 1 or prediction.shape[0] % parts:
        raise ValueError(f"parts must divide the batch size {prediction.shape[0]}, got {parts}")
    prediction, target = prediction.float(), target.float()
    error = _pixel_error(prediction, target, criterion).flatten(1).mean(1)
    if criterion.endswith("ms_ssim"):
        error = error + (1.0 - ms_ssim_per_image(prediction, target, data_range))
    return error.view(parts, -1).mean(1)


def _pixel_error(prediction: Tensor, target: Tensor, criterion: str) -> Tensor:
    """|prediction - target| for the ``l1`` criteria, its square for the ``l2`` ones; the inputs' shape."""
    difference = prediction - target
    return difference.abs() if criterion.startswith("l1") else difference**2


def _check_pair(prediction: Tensor, target: Tensor, criterion: str) -> None:
    if criterion not in CRITERIA:
        raise ValueError(f"criterion must be one of {CRITERIA}, got {criterion!r}")
    if prediction.shape != target.shape:
        raise ValueError(
            f"prediction {tuple(prediction.shape)} and target {tuple(target.shape)} differ in shape"
        )
