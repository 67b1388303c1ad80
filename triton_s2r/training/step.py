"""The data of one training step and what the callbacks see of it.

``StepInputs``: a batch's crops at the current stage; ``Forward``: what the step computes; ``StepResult``: what it
leaves the callbacks; ``SteppedSystem``: what the callbacks read from the system; ``logging_batch``: whether the
loggers write this batch's metrics.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from torch import Tensor

if TYPE_CHECKING:
    import pytorch_lightning as pl
    from pytorch_lightning.loggers import Logger

    from triton_s2r.models.triton import TritonModel
    from triton_s2r.render.gbuffer import GBuffer


@dataclass(frozen=True)
class StepInputs:
    """A batch's crops at the current training stage, on the step's device.

    Attributes:
        uv, label: (B, 2, H * k, W * k) and (B, H * k, W * k) of the sim crops, k = ``supersample``.
        supersample: the renders' supersampling factor k (1 for frames read from disk).
        real: (B, 3, H, W) photo crops in [-1, 1].
        robot: the photos' robot rendered at their crops (``robot_pairing``), (B, 2, H, W) and (B, H, W); None
            without robot pairing.
    """

    uv: Tensor
    label: Tensor
    supersample: int
    real: Tensor
    robot: GBuffer | None = None


@dataclass(frozen=True)
class Forward:
    """One forward pass of a batch, shared by the discriminator and generator phases.

    Attributes:
        uv, label: (B, 2, H, W) and (B, H, W) of the sim batch at output resolution.
        x_a: (B, 6 + C - 3, H, W) the sim input; projection: (B, C, H, W) the texture projection π.
        real: (B, 3, H, W) photos in [-1, 1].
        x_ab: (B, 3, H, W) the sim -> real translation in [-1, 1].
        x_ab_fixed_texture: x_ab with the texture's gradient stopped where the model shades the texture
            (``TritonModel.decode_real``), else x_ab itself.
        c_a, c_b: content codes of x_a and of the photos; x_ba: the real -> sim translation (None where a
            system has no real -> sim half, as the paired oracle); c_ab: the content code of x_ab_fixed_texture, for
            the content and cycle terms (None without them).
        robot_x_ab: (B, 3, H, W) the translation of the photos' robot renders (``robot_pairing``), made in the same
            network calls as x_ab; robot_label: (B, H, W) those renders' labels; robot_projection: (B, C, H, W) their
            texture projection π (``texture_pairing``); all three None when no photo is rendered.
        object_fake, object_real: (B, 3, S, S) windows around an object in x_ab and in the photos
            (``object_adversarial``, ``training.object_crops``); None without that term.
    """

    uv: Tensor
    label: Tensor
    x_a: Tensor
    projection: Tensor
    real: Tensor
    x_ab: Tensor
    x_ab_fixed_texture: Tensor
    c_a: Tensor | None = None
    c_b: Tensor | None = None
    c_ab: Tensor | None = None
    x_ba: Tensor | None = None
    robot_x_ab: Tensor | None = None
    robot_label: Tensor | None = None
    robot_projection: Tensor | None = None
    object_fake: Tensor | None = None
    object_real: Tensor | None = None


@dataclass(frozen=True)
class StepResult:
    """The last training step, for the callbacks of ``triton_s2r.training.callbacks`` (all on the device).

    Attributes:
        forward: the batch's forward pass (the previews draw it).
        losses: the unweighted generator terms by name, plus ``"discriminator"``, the weighted D loss.
        skipped: 0-dim bool, True when a phase's loss was not finite and its optimizer step did nothing.
    """

    forward: Forward
    losses: dict[str, Tensor]
    skipped: Tensor


class SteppedSystem(Protocol):
    """What the callbacks read from the GAN system (``TritonSystem``), so they need not import it.

    Attributes:
        model: the translator being trained.
        model_ema: its weight average (set by the ``WeightAverage`` callback).
        batches_trained: batches trained so far, counted on the host.
        last_step: the step just taken, until the batch ends.
        logger: the run's logger, if any.
    """

    model: TritonModel
    model_ema: TritonModel
    batches_trained: int
    last_step: StepResult | None

    @property
    def logger(self) -> Logger | None:
        """The run's logger, if any (``LightningModule.logger``)."""
        ...

    def log(self, name: str, value: Any) -> None:
        """Log a metric (``LightningModule.log``)."""
        ...


def logging_batch(trainer: pl.Trainer) -> bool:
    """Whether the loggers will write the metrics logged in this training batch (every ``log_every_n_steps``).

    Lightning keeps only those: a metric logged in another batch is overwritten unseen, and each ``log`` call costs
    the host about half a millisecond (copies and checks of the value), which a compiled step, bound by the host,
    pays in full. Lightning's own monitors (``LearningRateMonitor``, ``DeviceStatsMonitor``) ask the same question;
    there is no public API for it.
    """
    return trainer._logger_connector.should_update_logs
