"""The loss settings of a training run as one checked value (docs/method.md §4): the ``loss`` config group.

``LossSettings`` fields are the group's keys (``triton_s2r/conf/loss/default.yaml``), plus ``sim_clip_frames``,
which ``triton_s2r.train`` takes from ``data.sim_clip_frames`` (the clips the batches come in are the data's).
Values are checked once, when the settings are made; the system then reads ``losses.<field>``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any

from triton_s2r.losses.adversarial import GAN_TYPES
from triton_s2r.losses.reconstruction import CRITERIA
from triton_s2r.losses.texture_reality import TARGETS, TRAINS


def _is_finite_nonnegative(value: object) -> bool:
    """Whether ``value`` is an int or float (not a bool), finite and >= 0."""
    return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value) and value >= 0


def _rgb(name: object, colour: object) -> tuple[float, float, float]:
    """``loss.label_colours.NAME`` as (r, g, b) in [0, 1]: from three numbers in [0, 1] or a ``"#rrggbb"`` string."""
    if isinstance(colour, str) and re.fullmatch(r"#[0-9a-fA-F]{6}", colour):
        r, g, b = (int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5))
        return r, g, b
    values = tuple(colour) if isinstance(colour, (list, tuple)) else ()
    if len(values) != 3 or not all(_is_finite_nonnegative(v) and v <= 1 for v in values):
        raise ValueError(f"loss.label_colours.{name} must be three numbers in [0, 1] (r, g, b) or a hex string "
                         f"'#rrggbb', got {colour!r}")
    r, g, b = (float(v) for v in values)
    return r, g, b


@dataclass(frozen=True)
class LossSettings:
    """Weights, criteria and switches of the loss terms.

    Args:
        loss_weights: weight per term name (absent: 0); a term with weight 0 is not computed. Reference:
            adversarial 1, reconstruction 10, content 1, cycle 10, surface_consistency 20, texture_reality 2;
            ``surface_chroma_consistency`` (ℓUC blind to brightness) is ours, ``paired`` the oracle's.
        gan_type: one of ``GAN_TYPES``: ``"lsgan"`` (reference) or ``"hinge"``.
        criterion: Ω of the reconstruction, cycle and texture-reality terms, one of ``CRITERIA``
            (``"l1_ms_ssim"`` reference).
        content_criterion: Ω of the content term (on the content codes).
        surface_grid_size: ℓUC texels per side per label. Reference: 128.
        surface_color_normalization_eps: ℓUC colour normalisation ε_c > 0 (reference code 0.1; None = off, paper).
        surface_blur_sigma: σ >= 0 in pixels of a blur within each label before ℓUC and its chroma form splat the
            translation (``surface_consistency.blur_within_labels``), so that detail finer than it, which two
            views sample differently, is not charged as inconsistency; 0: none (paper).
        texture_reality_target: one of ``TARGETS``: ``"projection"`` (paper: π) or ``"sim_input"`` (reference
            code: x_a[:3]).
        texture_reality_trains: which side ℓTR trains, one of ``TRAINS``: ``"both"`` (paper), ``"texture"``
            (the translation is detached) or ``"translator"`` (the target is detached).
        surface_losses_from: ℓUC, its chroma form and ℓTR join the objective after this many batches (0: from
            the first, as the paper). Before that textures and translator train with the MUNIT terms only, so
            the translator learns realistic colours before the surface losses tie it to the textures
            (docs/method.md §5.4).
        detach_sim_targets: the reconstruction and cycle terms compare with x_a as a fixed target, so they train
            the texture only through the networks' input. False (reference): both sides.
        r1_gamma: γ of the R1 penalty (γ/2)·E‖∇_x D(x)‖² on the real images of both discriminators (the photos
            for D_B, x_a for D_A), added to the discriminator loss; 0 (reference): off; the shipped config: 100.
        r1_interval: k >= 1: the R1 penalty is computed at every k-th batch only, weighted by k (lazy
            regularisation, as StyleGAN2): the discriminators' real-image pass leaves the compiled networks and
            is differentiated twice on those batches only. 1: every batch.
        sim_clip_frames: N > 1: sim batches come in clips of N neighbouring frames and plain ℓUC compares only
            the frames of one clip (the chroma term still compares the whole batch); 1: the whole batch (paper).
        label_colours: label name -> its colour in the photos, (r, g, b) in [0, 1] or a hex string ``"#rrggbb"``
            (sRGB, as the images; kept as (r, g, b)), for the ``label_colours`` term (docs/method.md §4.11); the
            labels not named have none (None: no label has).

    Raises:
        ValueError: a value outside its allowed set or range, naming the ``loss.`` key.
    """

    loss_weights: Mapping[str, float]
    gan_type: str = "lsgan"
    criterion: str = "l1_ms_ssim"
    content_criterion: str = "l1_ms_ssim"
    surface_grid_size: int = 128
    surface_color_normalization_eps: float | None = None
    surface_blur_sigma: float = 0.0
    texture_reality_target: str = "projection"
    texture_reality_trains: str = "both"
    surface_losses_from: int = 0
    detach_sim_targets: bool = False
    r1_gamma: float = 0.0
    r1_interval: int = 1
    sim_clip_frames: int = 1
    label_colours: Mapping[str, tuple[float, float, float]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name, allowed in (("gan_type", GAN_TYPES), ("criterion", CRITERIA), ("content_criterion", CRITERIA),
                              ("texture_reality_target", TARGETS), ("texture_reality_trains", TRAINS)):
            if getattr(self, name) not in allowed:
                raise ValueError(f"loss.{name} must be one of {allowed}, got {getattr(self, name)!r}")
        for name, low in (("surface_grid_size", 1), ("surface_losses_from", 0), ("sim_clip_frames", 1),
                          ("r1_interval", 1)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"loss.{name} must be an integer >= {low}, got {value!r}")
        eps = self.surface_color_normalization_eps
        if eps is not None and not eps > 0:
            raise ValueError(f"loss.surface_color_normalization_eps must be null or > 0, got {eps!r}")
        if not _is_finite_nonnegative(self.surface_blur_sigma):
            raise ValueError(f"loss.surface_blur_sigma must be a finite number >= 0, got {self.surface_blur_sigma!r}")
        if not _is_finite_nonnegative(self.r1_gamma):
            raise ValueError(f"loss.r1_gamma must be a finite number >= 0, got {self.r1_gamma!r}")
        colours = {str(name): _rgb(name, colour) for name, colour in (self.label_colours or {}).items()}
        object.__setattr__(self, "label_colours", MappingProxyType(colours))
        if self.loss_weights.get("label_colours") and not colours:
            raise ValueError("loss.loss_weights.label_colours is set but loss.label_colours names no label: give the "
                             "labels' colours (e.g. loss.label_colours={can:[0.8,0.1,0.1]}) or set the weight to 0")
        weights = {}
        for name, weight in self.loss_weights.items():
            if not _is_finite_nonnegative(weight):
                raise ValueError(f"loss.loss_weights.{name} must be a finite number >= 0, got {weight!r}")
            weights[name] = float(weight)
        object.__setattr__(self, "loss_weights", MappingProxyType(weights))  # frozen all the way down

    def weights(self, terms: tuple[str, ...], owner: str) -> dict[str, float]:
        """The weight of each of ``terms`` (0 where unset).

        Raises:
            ValueError: a term outside ``terms`` has a weight other than 0 (``owner`` cannot compute it).
        """
        unknown = sorted(name for name, weight in self.loss_weights.items() if weight and name not in terms)
        if unknown:
            raise ValueError(f"unknown loss terms {unknown} for {owner}; its terms are {terms}")
        return {name: self.loss_weights.get(name, 0.0) for name in terms}

    def as_dict(self) -> dict[str, Any]:
        """Plain values (for hyperparameters and logs): ``LossSettings(**settings.as_dict())`` is ``settings``."""
        plain = {f.name: getattr(self, f.name) for f in fields(self)}
        return {**plain, "loss_weights": dict(self.loss_weights),
                "label_colours": {name: list(colour) for name, colour in self.label_colours.items()}}
