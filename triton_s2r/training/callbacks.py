"""The jobs around the GAN step, as Lightning callbacks.

``TritonSystem.configure_callbacks`` hands them its settings, so every ``Trainer`` that fits the system runs them
(``triton-s2r train``, the tests, the benchmarks).

* ``WeightAverage``: the exponential moving average of the translator's weights (``system.ema_decay``),
  which validation, ``best.ckpt`` and ``Translator`` use (docs/method.md §5.5).
* ``NonFiniteGuard``: counts the steps skipped for a non-finite loss and stops training after
  ``system.max_nonfinite_steps`` in a row (docs/training.md, failure handling).
* ``Previews``: an image grid and the baked textures every ``system.preview_every_n_batches`` batches.
* ``RandomStates``: the RNG states in every checkpoint, so a resumed run continues exactly.
* ``LearningRateDecay``: every learning rate falls linearly to 0 over the end of the run (``system.lr_decay_from``).
* ``CompileNotice``: says why a compiled run's first batch takes minutes, and how long it took (``system.compile``).
  With ``system.compile_in_background`` the system adds ``background_compile.BackgroundCompile`` instead.

They read what the step leaves on the system: ``model``, ``batches_trained`` (batches done, counted on the host)
and ``last_step`` (a ``StepResult``). Nothing here waits for the GPU in a step, except where said.
"""

from __future__ import annotations

import copy
import logging
import random
import time
from pathlib import Path
from typing import cast

import numpy as np
import pytorch_lightning as pl
import torch
from pytorch_lightning.callbacks import Timer
from torch.optim.swa_utils import get_ema_multi_avg_fn

from triton_s2r.inference.video import to_uint8
from triton_s2r.models.triton import to_unit
from triton_s2r.runs.run_dir import RunDir
from triton_s2r.training.step import SteppedSystem, logging_batch

log = logging.getLogger(__name__)
#: Batches between reads of the non-finite step counters (each read waits for the GPU).
NONFINITE_CHECK_EVERY = 10


class NonFiniteLossError(RuntimeError):
    """Training produced non-finite losses too many times in a row."""


class WeightAverage(pl.Callback):
    """Exponential moving average of the translator's weights (generators and texture, not discriminators).

    The average is a frozen copy of ``pl_module.model`` (not optimised, not compiled) attached to the system as
    ``model_ema``: it moves to the device with the system and is saved in its checkpoints as the ``model_ema.*``
    entries that ``Translator`` loads. After batch t it moves towards the trained weights by 1 - d,
    d = min(decay, (1 + t) / (10 + t)), in one fused kernel; a skipped step moves it nothing new, since its
    weights did not change.

    Args:
        decay: d per batch once warmed up, in (0, 1). Reference: no average; ours 0.999.
    """

    def __init__(self, decay: float) -> None:
        self.decay = decay

    def setup(self, trainer: pl.Trainer, pl_module: SteppedSystem, stage: str) -> None:
        """Lightning hook: make ``model_ema``, a frozen copy of the translator, unless the system has one already."""
        # Runs before a resumed run's checkpoint is loaded into the system, model_ema.* entries included.
        # Module.__getstate__ leaves compiled wrappers out, so the copy of a compiled model runs eagerly.
        if not hasattr(pl_module, "model_ema"):
            pl_module.model_ema = copy.deepcopy(pl_module.model).requires_grad_(False)

    @torch.no_grad()
    def on_train_batch_end(self, trainer: pl.Trainer, pl_module: SteppedSystem, outputs, batch,
                           batch_idx: int) -> None:
        """Lightning hook: move ``model_ema`` towards the weights just trained (decay warmed up); copy buffers."""
        t = pl_module.batches_trained - 1  # the batch just trained
        update = get_ema_multi_avg_fn(min(self.decay, (1 + t) / (10 + t)))
        update(list(pl_module.model_ema.parameters()), list(pl_module.model.parameters()), None)
        for average, buffer in zip(pl_module.model_ema.buffers(), pl_module.model.buffers(), strict=True):
            average.copy_(buffer)


def time_budget(trainer: pl.Trainer) -> Timer | None:
    """The trainer's ``Timer``, which Lightning adds for ``trainer.max_time``; None without a time budget."""
    callbacks = trainer.callbacks  # pyright: ignore[reportAttributeAccessIssue]  # set in Trainer.__init__
    return next((c for c in callbacks if isinstance(c, Timer)), None)


def run_progress(trainer: pl.Trainer, batches_done: int) -> float:
    """How far the run is through its budget, in [0, 1]: of its batches or of its time, whichever is further.

    Batches: ``trainer.max_epochs`` times the batches of an epoch (``num_training_batches``); time:
    ``trainer.max_time`` (Lightning's ``Timer``, whose elapsed time a resumed run carries on).
    """
    progress = 0.0
    batches = trainer.num_training_batches
    if trainer.max_epochs is not None and trainer.max_epochs > 0 and batches not in (0, float("inf")):
        progress = batches_done / (trainer.max_epochs * batches)
    timer = time_budget(trainer)
    remaining = timer.time_remaining("train") if timer is not None else None
    if timer is not None and remaining is not None:
        elapsed = timer.time_elapsed("train")
        progress = max(progress, elapsed / max(elapsed + remaining, 1e-9))
    return min(max(progress, 0.0), 1.0)


class LearningRateDecay(pl.Callback):
    """Every learning rate falls linearly to 0 over the last part of the run (CycleGAN's schedule, by budget).

    Before each batch each optimizer group's rate is its configured rate (``base_lr``, set by
    ``TritonSystem.configure_optimizers``) times min(1, (1 - progress) / (1 - start)), progress being
    ``run_progress``: so a run bounded by time decays in its last minutes as one bounded by batches does in its
    last batches. The rates are plain floats of eager optimizers, so compiled steps need no recompilation.

    Args:
        start: the progress in [0, 1) from which the rates decay.
    """

    def __init__(self, start: float) -> None:
        if not 0.0 <= start < 1.0:
            raise ValueError(f"system.lr_decay_from must be in [0, 1), got {start}")
        self.start = start

    def factor(self, progress: float) -> float:
        """The rates' multiplier at ``progress``."""
        return min(1.0, max(0.0, (1.0 - progress) / (1.0 - self.start)))

    def on_train_batch_start(self, trainer: pl.Trainer, pl_module: SteppedSystem, batch, batch_idx: int) -> None:
        """Lightning hook: set every group's rate for this batch."""
        factor = self.factor(run_progress(trainer, pl_module.batches_trained))
        for optimizer in trainer.optimizers:
            for group in optimizer.param_groups:
                group["lr"] = group["base_lr"] * factor


class NonFiniteGuard(pl.Callback):
    """Stops training once ``max_steps`` consecutive steps were skipped for a non-finite loss.

    The system skips such a step on the device (``TritonSystem._optimize``); here the (all, consecutive)
    skipped-step counts are kept on the device, logged as ``train/nonfinite_steps``, and read back (a wait for
    the GPU) only every ``NONFINITE_CHECK_EVERY`` batches and at epoch ends, so the stop can come up to that
    many batches late. The count of all skipped steps travels in the checkpoint (``nonfinite_steps``).

    Args:
        max_steps: consecutive skipped steps before ``NonFiniteLossError``.
    """

    def __init__(self, max_steps: int) -> None:
        self.max_steps = max_steps
        self._counts = torch.zeros(2, dtype=torch.long)  # (all, consecutive) skipped steps
        self._last_losses: dict[str, torch.Tensor] = {}

    def on_train_batch_end(self, trainer: pl.Trainer, pl_module: SteppedSystem, outputs, batch,
                           batch_idx: int) -> None:
        """Lightning hook: count the step if it was skipped (on the device); check every ``NONFINITE_CHECK_EVERY``."""
        step = pl_module.last_step
        assert step is not None  # the system clears it only after the callbacks' batch-end hooks
        counts = self._counts = self._counts.to(step.skipped.device)
        counts[1] = (counts[1] + 1) * step.skipped
        counts[0] += step.skipped
        self._last_losses = step.losses
        if logging_batch(trainer):
            pl_module.log("train/nonfinite_steps", counts[0].float())
        if pl_module.batches_trained % NONFINITE_CHECK_EVERY == 0:
            self._check(pl_module.batches_trained)

    def on_train_epoch_end(self, trainer: pl.Trainer, pl_module: SteppedSystem) -> None:
        """Lightning hook: check the counts at every epoch end."""
        self._check(pl_module.batches_trained)

    def _check(self, batches: int) -> None:
        """Raise once steps keep being skipped (reads the counts: waits for the GPU)."""
        consecutive = int(self._counts[1])
        if consecutive >= self.max_steps:
            bad = [name for name, value in self._last_losses.items() if not torch.isfinite(value)]
            raise NonFiniteLossError(
                f"{consecutive} consecutive steps had non-finite losses ({', '.join(bad)}) up to batch "
                f"{batches}; lower the learning rate (system.lr), enable gradient clipping "
                "(system.gradient_clip_val) or resume from an earlier checkpoint"
            )

    def on_save_checkpoint(self, trainer: pl.Trainer, pl_module: SteppedSystem, checkpoint: dict) -> None:
        """Lightning hook: keep the total count of skipped steps in the checkpoint."""
        checkpoint["nonfinite_steps"] = int(self._counts[0])

    def on_load_checkpoint(self, trainer: pl.Trainer, pl_module: SteppedSystem, checkpoint: dict) -> None:
        """Lightning hook: restore the total count; the consecutive count starts again at 0."""
        self._counts = torch.tensor([checkpoint.get("nonfinite_steps", 0), 0])


class Previews(pl.Callback):
    """Preview images and the baked textures, every ``every_n_batches`` batches.

    Rows: UVL hint, texture projection, translation, a real photo; plus the baked textures, one tile per label (rows
    follow u, columns follow v). Written as PNG into the run directory's ``previews/``, and to W&B when that logger is
    used. Reads the images back from the GPU.

    Args:
        every_n_batches: batches between previews.
    """

    def __init__(self, every_n_batches: int) -> None:
        self.every_n_batches = every_n_batches

    @torch.no_grad()
    def on_train_batch_end(self, trainer: pl.Trainer, pl_module: SteppedSystem, outputs, batch,
                           batch_idx: int) -> None:
        """Lightning hook: write the preview grid and the baked textures every ``every_n_batches`` batches."""
        batches = pl_module.batches_trained
        if batches % self.every_n_batches:
            return
        from triton_s2r.utils.files import write_image

        assert pl_module.last_step is not None  # the system clears it only after the callbacks' batch-end hooks
        out = pl_module.last_step.forward
        n = min(4, out.x_ab.shape[0])
        rows = [to_unit(out.x_a[:n, 3:6]), to_unit(out.projection[:n, :3]), to_unit(out.x_ab[:n]),
                to_unit(out.real[:n])]
        grid = torch.cat([torch.cat(list(r), dim=2) for r in rows], dim=1)  # (3, 4H, nW)
        image = to_uint8(grid.permute(1, 2, 0).cpu().numpy())
        with trainer.precision_plugin.train_step_context():  # baked at the step's precision, as the step drew it
            textures = pl_module.model.texture.bake(64)[:, :3].float().clamp(0, 1)
        tiles = to_uint8(torch.cat(list(textures), dim=2).permute(1, 2, 0).cpu().numpy())
        folder = RunDir(Path(trainer.default_root_dir)).preview_dir
        folder.mkdir(parents=True, exist_ok=True)
        write_image(folder / f"batch_{batches:07d}.png", image)
        write_image(folder / f"textures_{batches:07d}.png", tiles)
        logger = pl_module.logger
        if logger is not None and hasattr(logger, "log_image"):
            # W&B's logger (hasattr above): the base Logger declares no log_image.
            logger.log_image("previews/grid", [image], step=batches)  # pyright: ignore[reportAttributeAccessIssue]
            logger.log_image("previews/textures", [tiles], step=batches)  # pyright: ignore[reportAttributeAccessIssue]


class RandomStates(pl.Callback):
    """The torch, NumPy, Python and CUDA RNG states in every checkpoint (``rng``), restored on resume.

    A resumed run so draws what an uninterrupted one draws (the step and the schedules live in the state dict).
    """

    def on_save_checkpoint(self, trainer: pl.Trainer, pl_module: SteppedSystem, checkpoint: dict) -> None:
        """Lightning hook: store the RNG states as plain types, so the checkpoint loads with ``weights_only=True``."""
        # This tuple with legacy=True (the default); numpy's stubs add legacy=False's dict to the return type.
        name, keys, pos, has_gauss, gauss = cast(tuple[str, np.ndarray, int, int, float], np.random.get_state())
        # Plain types only, so the checkpoint loads with torch.load(weights_only=True).
        checkpoint["rng"] = {"torch": torch.get_rng_state(), "python": random.getstate(),
                             "numpy": (name, torch.from_numpy(keys.astype(np.int64)), pos, has_gauss, gauss)}
        if torch.cuda.is_available():
            checkpoint["rng"]["cuda"] = torch.cuda.get_rng_state_all()

    def on_load_checkpoint(self, trainer: pl.Trainer, pl_module: SteppedSystem, checkpoint: dict) -> None:
        """Lightning hook: restore the saved RNG states (CUDA's only where CUDA is available)."""
        rng = checkpoint.get("rng")
        if rng:
            torch.set_rng_state(rng["torch"])
            name, keys, pos, has_gauss, gauss = rng["numpy"]
            np.random.set_state((name, keys.numpy().astype(np.uint32), pos, has_gauss, gauss))
            random.setstate(rng["python"])
            if "cuda" in rng and torch.cuda.is_available():
                torch.cuda.set_rng_state_all(rng["cuda"])


class CompileNotice(pl.Callback):
    """Logs, on the first rank, why the first batch of a compiled fit takes long, then how long it took.

    ``torch.compile`` compiles each network at its first call: minutes on a machine's first run, seconds once
    Inductor's on-disk cache holds the same networks and shapes (docs/training.md, "Speed options"). The time is the
    host's, from the start of the first batch to its end, which compilation dominates.
    """

    def __init__(self) -> None:
        self._first_batch_start: float | None = None
        self._reported = False

    def on_train_batch_start(self, trainer: pl.Trainer, pl_module: SteppedSystem, batch, batch_idx: int) -> None:
        """Lightning hook: at the fit's first batch, say that it compiles."""
        if self._first_batch_start is None and trainer.is_global_zero:
            log.info("system.compile: the first batch compiles the networks, minutes on a machine's first run and "
                     "about 20 s once Inductor's cache holds them (TORCHINDUCTOR_CACHE_DIR keeps it elsewhere)")
            self._first_batch_start = time.perf_counter()

    def on_train_batch_end(self, trainer: pl.Trainer, pl_module: SteppedSystem, outputs, batch, batch_idx: int) -> None:
        """Lightning hook: after the fit's first batch, say how long it took."""
        if self._first_batch_start is not None and not self._reported:
            log.info("system.compile: the first batch took %.0f s, compilation included",
                     time.perf_counter() - self._first_batch_start)
            self._reported = True
