"""The probability of the discriminators' augmentations, adapted to how sure D_B is of its photos.

docs/method.md §3.2.1.

Adaptive discriminator augmentation (Karras et al., NeurIPS 2020): a discriminator that memorises a small set of
photos calls them real with growing confidence. The share of the photos' patch logits on the real side of the
decision boundary, r = E[sign(D(x) - m)] in [-1, 1] (m = 0.5 for LSGAN, 0 for hinge), measures it. Each batch moves
the probability p of every augmentation by ``1 / batches_to_full`` up when r is above ``target`` and down when
below, within [0, 1]: p rises while D memorises and settles where r stays at the target.

Everything stays on the device (no wait for the GPU). Under DDP each rank adapts its own p from its own photos.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor, nn

#: The logit between the real and the fake targets, per ``loss.gan_type``.
DECISION_BOUNDARY = {"lsgan": 0.5, "hinge": 0.0}


def real_sign_mean(real_logits: Sequence[Tensor], gan_type: str) -> Tensor:
    """ADA's overfitting heuristic r_t: the mean over scales of mean(sign(logit - boundary)); scalar float32 in [-1, 1].

    Args:
        real_logits: per scale, (B, 1, h_s, w_s) logits of a discriminator on its training photos.
        gan_type: a key of ``DECISION_BOUNDARY``.
    """
    boundary = DECISION_BOUNDARY[gan_type]
    return torch.stack([torch.sign(x.float() - boundary).mean() for x in real_logits]).mean()


class AugmentProbability(nn.Module):
    """p of ``data.augment.diff_augment``, a buffer (saved in checkpoints): fixed at 1, or adapted by ``update``.

    Args:
        target: r_t at which p settles, in (-1, 1) (ADA: 0.6); None keeps p at 1 (every image augmented).
        batches_to_full: batches of steady memorising that take p from 0 to 1 (>= 1).
    """

    p: Tensor  # scalar float32 in [0, 1]

    def __init__(self, target: float | None, batches_to_full: int) -> None:
        super().__init__()
        if target is not None and not -1 < target < 1:
            raise ValueError(f"system.discriminator_augment_target must be in (-1, 1) or null, got {target}")
        if batches_to_full < 1:
            raise ValueError(f"system.discriminator_augment_batches must be an integer >= 1, got {batches_to_full}")
        self.target = target
        self.step = 1.0 / batches_to_full
        self.register_buffer("p", torch.tensor(1.0 if target is None else 0.0))

    @property
    def adaptive(self) -> bool:
        """Whether ``update`` moves p (a target was given)."""
        return self.target is not None

    @torch.no_grad()
    def update(self, real_logits: Sequence[Tensor], gan_type: str) -> None:
        """Move p one step towards where ``real_sign_mean`` of ``real_logits`` meets the target (fixed: nothing)."""
        if self.target is None:
            return
        direction = torch.sign(real_sign_mean(real_logits, gan_type) - self.target)
        self.p.add_(direction * self.step).clamp_(0.0, 1.0)
