"""Each phase's gradient norms: their record for the logs, and the clip relative to the earlier ones."""

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

    def __call__(self, gradients: list[Tensor]) -> tuple[Tensor, Tensor]:
        """Clip ``gradients`` in place; returns their total norm before clipping and whether it was clipped.

        Both 0-dim, on the gradients' device (the norm float, the flag bool).
        """
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
        return norm, norm > limit


class GradientNormRecord:
    """Each phase's gradient norms for the logs, kept on the device: the latest batch's and the largest since a reset.

    Every batch adds its norm; the logs read ``metrics()`` only at logging batches, and the training system resets the
    peak and the clipped count at each validation, so each row of ``curves.csv`` shows the largest batch of the
    interval before it, which the one batch logged before a validation would mostly miss. A non-finite norm (a step
    skipped) does not enter the peak; ``train/nonfinite_steps`` counts those.
    """

    def __init__(self) -> None:
        self.latest: dict[str, Tensor] = {}
        self.peak: dict[str, Tensor] = {}
        self.clipped: dict[str, Tensor] = {}

    def add(self, phase: str, norm: Tensor, clipped: Tensor | None = None) -> None:
        """Record ``phase``'s norm before clipping (0-dim) and, under a relative clip, whether it clipped (0-dim)."""
        self.latest[phase] = norm
        # fmax leaves a NaN out; the first peak starts from 0 (a norm is never below)
        self.peak[phase] = torch.fmax(self.peak[phase] if phase in self.peak else torch.zeros_like(norm), norm)
        if clipped is not None:
            self.clipped[phase] = self.clipped[phase] + clipped if phase in self.clipped else clipped.float()

    def metrics(self) -> dict[str, Tensor]:
        """``gradient_norm_<phase>`` (the latest), ``gradient_norm_<phase>_peak`` and ``gradient_clipped_<phase>``."""
        return {**{f"gradient_norm_{phase}": norm for phase, norm in self.latest.items()},
                **{f"gradient_norm_{phase}_peak": norm for phase, norm in self.peak.items()},
                **{f"gradient_clipped_{phase}": count for phase, count in self.clipped.items()}}

    def reset(self) -> None:
        """Start a new interval: forget the peak and the clipped count (the latest norm stays)."""
        self.peak.clear()
        self.clipped.clear()
