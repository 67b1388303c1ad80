"""Adversarial losses over multi-scale patch logits (paper §3.2 ℓadv; docs/method.md §3.2, §4.4).

The reference uses LSGAN; hinge is the option. Both sides sum the per-scale means, as MUNIT does:

* LSGAN  D: Σ_s mean(D_s(fake)²) + mean((D_s(real) - 1)²)      G: Σ_s mean((D_s(fake) - 1)²)
* hinge  D: Σ_s mean(relu(1 - D_s(real))) + mean(relu(1 + D_s(fake)))      G: Σ_s -mean(D_s(fake))

Logits come from ``MultiScaleDiscriminator.forward``: one (B, 1, h_s, w_s) tensor per scale. Detaching the
fakes for the discriminator step is the caller's job.

``mean_logit`` is no loss: the score a discriminator gives a batch, logged to see it memorise its photos.

``r1_penalty`` is the R1 regulariser of the discriminator step (Mescheder et al., ICML 2018): the
squared gradient of D's real-image output with respect to the real image.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

GAN_TYPES = ("lsgan", "hinge")


def _check(gan_type: str, *logit_lists: Sequence[Tensor]) -> None:
    if gan_type not in GAN_TYPES:
        raise ValueError(f"gan_type must be one of {GAN_TYPES}, got {gan_type!r}")
    _check_scales(*logit_lists)


def _check_scales(*logit_lists: Sequence[Tensor]) -> None:
    for logits in logit_lists:
        if len(logits) == 0:
            raise ValueError("expected at least one scale of discriminator logits")


def mean_logit(logits: Sequence[Tensor]) -> Tensor:
    """A discriminator's mean patch logit, averaged over its scales: scalar float32.

    LSGAN trains real patches towards 1 and fakes towards 0 (hinge: past +1 and -1). The discriminator's score of
    its training photos running ahead of its score of held-out photos is the sign that it memorises them (the
    overfitting heuristic of Karras et al., NeurIPS 2020).
    """
    _check_scales(logits)
    return torch.stack([x.float().mean() for x in logits]).mean()


def generator_adversarial_loss(fake_logits: Sequence[Tensor], gan_type: str = "lsgan") -> Tensor:
    """Generator side: make the discriminator call the fakes real.

    Args:
        fake_logits: per scale, (B, 1, h_s, w_s) logits of the discriminator on generated images.
        gan_type: "lsgan" (reference) or "hinge".

    Returns:
        Scalar float32, unweighted, summed over scales. LSGAN: in [0, ∞), 0 when every logit is 1.
        Hinge: unbounded.
    """
    _check(gan_type, fake_logits)
    if gan_type == "lsgan":
        terms = [torch.mean((logits.float() - 1.0) ** 2) for logits in fake_logits]
    else:
        terms = [-torch.mean(logits.float()) for logits in fake_logits]
    return torch.stack(terms).sum()


def discriminator_adversarial_loss(
    real_logits: Sequence[Tensor], fake_logits: Sequence[Tensor], gan_type: str = "lsgan"
) -> Tensor:
    """Discriminator side: real patches towards 1, fake patches towards 0 (LSGAN) or past ∓1 (hinge).

    Args:
        real_logits: per scale, (B, 1, h_s, w_s) logits on real images.
        fake_logits: per scale, logits on (detached) generated images; same number of scales.
        gan_type: "lsgan" (reference) or "hinge".

    Returns:
        Scalar float32 in [0, ∞), unweighted, summed over scales.
    """
    _check(gan_type, real_logits, fake_logits)
    if len(real_logits) != len(fake_logits):
        raise ValueError(f"got {len(real_logits)} real scales but {len(fake_logits)} fake scales")
    terms = []
    for real, fake in zip(real_logits, fake_logits, strict=True):
        real, fake = real.float(), fake.float()
        if gan_type == "lsgan":
            terms.append(torch.mean((real - 1.0) ** 2) + torch.mean(fake**2))
        else:
            terms.append(torch.mean(torch.relu(1.0 - real)) + torch.mean(torch.relu(1.0 + fake)))
    return torch.stack(terms).sum()


def r1_penalty(real_logits: Sequence[Tensor], real: Tensor) -> Tensor:
    """R1: the mean over images of ‖∇_x D(x)‖² on real images, D(x) the sum over scales of the mean patch logit.

    Args:
        real_logits: per scale, (B, 1, h_s, w_s) logits of the discriminator on ``real``, computed with the graph
            kept (``real.requires_grad``).
        real: (B, C, H, W) the real images the logits come from, a leaf that requires grad.

    Returns:
        Scalar float32 >= 0, unweighted (the system multiplies it by γ/2). Differentiable with respect to the
        discriminator's weights (the gradient is taken with ``create_graph=True``).
    """
    if not real.requires_grad:
        raise ValueError("r1_penalty needs the real images to require grad before the discriminator sees them")
    _check_scales(real_logits)
    output = torch.stack([logits.float().flatten(1).mean(1) for logits in real_logits]).sum()
    (gradient,) = torch.autograd.grad(output, real, create_graph=True)
    return gradient.float().pow(2).flatten(1).sum(1).mean()
