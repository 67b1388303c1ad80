"""Texture reality ℓTR (paper §3.4; docs/method.md §4.5, §8.6).

The paper asks the translation p̂ = x_ab to resemble the texture projection π itself, Ω(π, p̂), so that
each neural texture learns the real object's colours. The reference code instead compared x_ab with
channels 0-2 of x_a, i.e. ``hint·m_h + π·m_t``; the two agree only for m_h = 0, m_t = 1.
``texture_reality_target`` picks either target ("projection" is the default, the paper's intent);
``texture_reality_loss`` compares on non-void pixels only. By default (``trains="both"``, paper and
reference) ℓTR trains the texture towards the translation as much as the translator towards the texture;
``trains="texture"`` detaches the translation (the texture learns the translation's colours, the translator
is left to the other terms) and ``trains="translator"`` detaches the target (the translator is pulled towards
the texture, which then learns only through the translator). docs/lab/results-2026-11-26.md measures all three: with the
surface losses joining after a warm-up, ``texture`` did best on the GPU benchmark and is the configured default.
"""

from __future__ import annotations

from torch import Tensor

from triton_s2r.losses.reconstruction import reconstruction_loss

TARGETS = ("projection", "sim_input")
TRAINS = ("both", "texture", "translator")


def texture_reality_target(projection: Tensor, sim_input: Tensor, target: str = "projection") -> Tensor:
    """The image ℓTR pulls the translation towards.

    Args:
        projection: (B, C, H, W) texture projection π in [-1, 1] (``models.texture_projection``),
            zero at void pixels.
        sim_input: (B, 6 + C - 3, H, W) x_a (``models.SimInput``).
        target: "projection" (paper: π[:, :3], range [-1, 1]) or "sim_input" (reference code:
            x_a[:, :3], range ±(m_h + m_t)).

    Returns:
        (B, 3, H, W) float.
    """
    if target not in TARGETS:
        raise ValueError(f"target must be one of {TARGETS}, got {target!r}")
    return projection[:, :3] if target == "projection" else sim_input[:, :3]


def texture_reality_loss(
    translation: Tensor,
    target: Tensor,
    label: Tensor,
    criterion: str = "l1_ms_ssim",
    data_range: float = 2.0,
    trains: str = "both",
) -> Tensor:
    """ℓTR = Ω(translation, target) over non-void pixels.

    Args:
        translation: (B, 3, H, W) sim→real translation x_ab in [-1, 1].
        target: (B, 3, H, W) from ``texture_reality_target``.
        label: (B, H, W) int64; void pixels (0) are excluded.
        criterion: Ω, one of ``reconstruction.CRITERIA``; reference "l1_ms_ssim".
        data_range: MS-SSIM data range: 2 for the "projection" target; use 2·(m_h + m_t) with
            the "sim_input" target to match its range.
        trains: which side the gradient reaches: "both" (paper), "texture" (translation detached) or
            "translator" (target detached). The value is the same for all three.

    Returns:
        Scalar float32 ≥ 0, unweighted; 0 when the translation equals the target on every non-void pixel.
    """
    if trains not in TRAINS:
        raise ValueError(f"trains must be one of {TRAINS}, got {trains!r}")
    if trains == "texture":
        translation = translation.detach()
    elif trains == "translator":
        target = target.detach()
    return reconstruction_loss(translation, target, criterion, data_range, mask=label > 0)
