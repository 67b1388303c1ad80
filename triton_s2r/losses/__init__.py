"""TRITON losses: small pure functions returning unweighted scalar tensors (docs/method.md §4).

The system weights and sums them in one place (reference weights: gan 1, recon 10, content 1, cycle 10,
surface consistency 20, texture reality 2); weights, criteria and switches are one checked value,
``LossSettings`` (the ``loss`` config group).
"""

from __future__ import annotations

from triton_s2r.losses.adversarial import (
    discriminator_adversarial_loss,
    generator_adversarial_loss,
    mean_logit,
    r1_penalty,
)
from triton_s2r.losses.reconstruction import ms_ssim, ms_ssim_levels, reconstruction_loss, reconstruction_losses
from triton_s2r.losses.settings import LossSettings
from triton_s2r.losses.surface_consistency import surface_chroma_consistency_loss, surface_consistency_loss
from triton_s2r.losses.texture_reality import texture_reality_loss, texture_reality_target

__all__ = [
    "LossSettings",
    "discriminator_adversarial_loss",
    "generator_adversarial_loss",
    "mean_logit",
    "ms_ssim",
    "ms_ssim_levels",
    "r1_penalty",
    "reconstruction_loss",
    "reconstruction_losses",
    "surface_chroma_consistency_loss",
    "surface_consistency_loss",
    "texture_reality_loss",
    "texture_reality_target",
]
