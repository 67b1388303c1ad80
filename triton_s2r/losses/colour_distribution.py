"""Object colours: the sliced Wasserstein distance between two sets of pixel colours (docs/method.md §4.10).

The photos' objects are not labelled, so no pixel of a translated object has a photo pixel to match; but the set of
colours that the objects show in the photos is known up to the objectness estimate, and the translated objects
should show the same set. Each set is projected on a few directions of colour space and compared quantile by
quantile (sliced Wasserstein-1). Masks select the pixels of each set; everything stays on the device with static
shapes (sorting with the unselected pixels pushed to the end, quantiles gathered at indices computed from the
counts), so nothing waits for the GPU.
"""

from __future__ import annotations

import torch
from torch import Tensor


def masked_quantiles(values: Tensor, mask: Tensor, quantiles: int) -> Tensor:
    """Quantiles of the selected values, per row.

    Args:
        values: (K, N) float.
        mask: (N,) bool, the values to use (the same for every row).
        quantiles: M, the number of quantiles, at the levels (j + 0.5) / M.

    Returns:
        (K, M): the values at those levels of the selected ones, sorted; zeros where nothing is selected.
    """
    count = mask.sum()
    ordered = torch.where(mask, values, torch.full_like(values, torch.inf)).sort(dim=1).values
    levels = (torch.arange(quantiles, device=values.device) + 0.5) / quantiles
    index = (levels * count).long().clamp(max=(count - 1).clamp_min(0))
    picked = ordered.gather(1, index.expand(values.shape[0], -1))
    return torch.where(count > 0, picked, torch.zeros_like(picked))


def colour_distribution_loss(fake: Tensor, fake_mask: Tensor, real: Tensor, real_mask: Tensor, directions: Tensor,
                             quantiles: int = 32) -> Tensor:
    """Sliced Wasserstein-1 distance between the colours of ``fake``'s and ``real``'s selected pixels.

    Args:
        fake: (B, 3, H, W) colours in [-1, 1] (the translations); the gradient reaches them.
        fake_mask: (B, H, W) bool, the pixels of ``fake`` to compare (the objects').
        real: (B', 3, H', W') colours in [-1, 1] (the photos), detached here.
        real_mask: (B', H', W') bool.
        directions: (K, 3) unit vectors of colour space to project on.
        quantiles: M, the quantiles compared per direction.

    Returns:
        0-dim float >= 0: the mean over directions and quantiles of |fake quantile - real quantile| (0 when either set
        is empty).
    """
    def projected(image: Tensor) -> Tensor:
        return directions.to(image.dtype) @ image.permute(1, 0, 2, 3).flatten(1)  # (K, B*H*W)

    fake_q = masked_quantiles(projected(fake), fake_mask.flatten(), quantiles)
    real_q = masked_quantiles(projected(real.detach()), real_mask.flatten(), quantiles)
    both = (fake_mask.any() & real_mask.any()).to(fake.dtype)
    return (fake_q - real_q).abs().mean() * both


def top_fraction(score: Tensor, fraction: Tensor) -> Tensor:
    """(N, ...) scores, 0-dim fraction in [0, 1] -> bool mask of the ``fraction`` highest scores (ties kept)."""
    flat = score.flatten()
    count = (fraction * flat.numel()).round().long().clamp(1, flat.numel())
    threshold = flat.sort(descending=True).values.gather(0, (count - 1).reshape(1))
    return (score >= threshold) & (score > 0)
