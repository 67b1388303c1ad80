"""Clipping a phase's gradient against the norms of the batches before it (``system.gradient_clip_ratio``)."""

from __future__ import annotations

import torch
from torch import Tensor


class RelativeGradientClip:
    """Scales a gradient down to ``ratio`` times the running mean of the earlier norms, without waiting for the GPU.

    Adam (β1 0.5, β2 0.999 here) moves each weight by up to about (1 - β1) / √(1 - β2) ≈ 16 learning rates in a batch
    whose gradient is far above the usual, against about one otherwise, so one such batch can throw a network off. A
    fixed limit (``system.gradient_clip_val``) must be chosen for each recipe and domain; this one follows the norms
    as they drift. The running mean (an exponential one, ``decay`` per batch) takes the norms as clipped, so a spike
    does not raise the limit, and a non-finite norm leaves it as it was. The first batch sets it, unclipped; it starts
    anew when a run resumes.
    """

    def __init__(self, ratio: float, decay: float = 0.99) -> None:
        if not ratio > 1:
            raise ValueError(f"the clip ratio must be above 1, got {ratio}")
        self.ratio, self.decay = ratio, decay
        self.mean: Tensor | None = None  # 0-dim, on the gradients' device; inf until the first finite norm

    def __call__(self, gradients: list[Tensor]) -> Tensor:
        """Clip ``gradients`` in place; returns their total norm before clipping (0-dim, on their device)."""
        norm = torch.nn.utils.get_total_norm(gradients)
        if self.mean is None:
            self.mean = torch.full_like(norm, float("inf"))
        limit = self.ratio * self.mean
        scale = (limit / (norm + 1e-6)).clamp(max=1.0)
        # One launch for all the tensors, as clip_grad_norm_ scales them (no public name for it).
        torch._foreach_mul_(gradients, scale)  # pyright: ignore[reportPrivateImportUsage]
        clipped = torch.minimum(norm, limit)
        updated = torch.where(torch.isinf(self.mean), clipped, self.decay * self.mean + (1 - self.decay) * clipped)
        self.mean = torch.where(torch.isfinite(norm), updated, self.mean)
        return norm
