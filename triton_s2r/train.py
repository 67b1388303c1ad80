"""Train TRITON: ``triton-s2r train <hydra overrides>`` (or ``python -m triton_s2r.train ...``).

Examples::

    triton-s2r train experiment=tiny data.root=outputs/data/tiny hydra.run.dir=outputs/runs/tiny
    triton-s2r train experiment=demo                                 # the main job's CPU training
    triton-s2r train experiment=paper trainer=ddp trainer.devices=4 system.compile=false  # several GPUs
    triton-s2r train experiment=tiny resume=outputs/runs/tiny trainer.max_epochs=4

The configs ship inside the package (``triton_s2r/conf``). The run directory receives ``config.yaml``
(the resolved config: everything inference needs), ``checkpoints/`` and ``previews/``.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import Any, cast

import hydra
import pytorch_lightning as pl
import torch
from hydra.core.hydra_config import HydraConfig
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import InstantiationException
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf, open_dict
from pytorch_lightning.callbacks import ModelCheckpoint, TQDMProgressBar
from pytorch_lightning.plugins import TorchCheckpointIO
from pytorch_lightning.utilities import rank_zero_only

from triton_s2r.losses.settings import LossSettings
from triton_s2r.runs.config import ConfigError, build_model, check_experiment_order, check_training_config, config_diff
from triton_s2r.runs.run_dir import BEST, EPOCH_PATTERN, CheckpointError, RunDir, load_checkpoint
from triton_s2r.tabletop.dataset import make_dataset
from triton_s2r.training.callbacks import NonFiniteLossError, time_budget
from triton_s2r.training.curves import TrainingCurves
from triton_s2r.utils.cuda_memory import prefer_expandable_segments
from triton_s2r.utils.files import atomic_write

log = logging.getLogger("triton_s2r.train")
#: Batches between progress-bar refreshes; each reads the logged losses back from the device (a GPU wait).
PROGRESS_EVERY = 10
#: Errors of the user's making (config, data, checkpoints): one clear line, no traceback (HYDRA_FULL_ERROR=1
#: shows it).
USER_ERRORS = (ValueError, FileNotFoundError, CheckpointError, NonFiniteLossError, ImportError)


class ProgressBar(TQDMProgressBar):
    """Lightning's progress bar with the system's last losses, refreshed every ``PROGRESS_EVERY`` batches.

    The losses (``system.progress``) are read from the device only at a refresh.
    """

    def __init__(self) -> None:
        super().__init__(refresh_rate=PROGRESS_EVERY)

    def get_metrics(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> dict:
        """Lightning's progress-bar metrics plus the system's last losses (read from the device here)."""
        losses = {name: f"{value.item():.3g}" for name, value in getattr(pl_module, "progress", {}).items()}
        return {**super().get_metrics(trainer, pl_module), **losses}


class RunCheckpointIO(TorchCheckpointIO):
    """Checkpoints written atomically and read safely, with errors that name the file.

    Written to a temporary file and renamed (a killed job never leaves a broken one), and read with
    ``weights_only=True`` (a checkpoint from elsewhere cannot run code).
    """

    def save_checkpoint(self, checkpoint: dict, path, storage_options=None) -> None:
        """Save ``checkpoint`` to ``path`` through a temporary file, renamed once complete."""
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        with atomic_write(path) as tmp:
            torch.save(checkpoint, tmp)

    def load_checkpoint(self, path, map_location=None, weights_only=None) -> dict:
        """Read ``path`` with ``weights_only=True`` (``runs.run_dir.load_checkpoint``); errors name the file."""
        return load_checkpoint(path, map_location=map_location)


def wandb_logger(project: str, save_dir: str, **kwargs):
    """Lightning's W&B logger, offline unless an account is configured (never a network call otherwise)."""
    from pytorch_lightning.loggers import WandbLogger

    netrc = Path.home() / ".netrc"
    configured = bool(os.environ.get("WANDB_API_KEY")) or (netrc.is_file() and "api.wandb.ai" in netrc.read_text())
    offline = os.environ.get("WANDB_MODE") in ("offline", "disabled") or not configured
    return WandbLogger(project=project, save_dir=save_dir, offline=offline, **kwargs)


def find_checkpoint(resume: str) -> Path:
    """``resume`` as a checkpoint file: a run directory means its ``checkpoints/last.ckpt``."""
    path = Path(resume)
    if path.is_dir():
        path = RunDir(path).last
    if not path.is_file():
        raise FileNotFoundError(f"checkpoint not found: {path}; pass resume=<run dir> or resume=<file.ckpt>")
    return path


def check_same_settings(run: RunDir, cfg: DictConfig) -> None:
    """Refuse to continue a run directory that holds a run with other settings (``config_diff``).

    Raises:
        ConfigError: listing the differing keys, and how to start a new run or continue this one anyway.
    """
    if not run.config_path.is_file():
        return
    diff = config_diff(run.config(), cfg)
    if diff:
        raise ConfigError(
            f"{run.path} holds a run with other settings ({run.config_path}):\n  " + "\n  ".join(diff) +
            f"\nrerun with that run's settings to continue it, choose another hydra.run.dir to start a new run, "
            f"or pass resume={run.path} to continue it with these settings"
        )


def build(cfg: DictConfig):
    """Data, system and the resolved config (``num_labels`` filled in from the data)."""
    prefer_expandable_segments()  # before the data's renderer or the networks allocate on the GPU
    datamodule = instantiate(cfg.data, builder=make_dataset)  # builds data.build_preset at data.root if missing
    datamodule.prepare_data()
    datamodule.setup("fit")
    with open_dict(cfg):
        cfg.num_labels = datamodule.labels.num_labels
    return datamodule, build_system(cfg)


def build_system(cfg: DictConfig):
    """``cfg.system`` with its networks and its ``LossSettings``.

    The settings are the ``loss`` group, and ℓUC's clips from ``data.sim_clip_frames`` (the clips the batches come
    in).
    """
    losses = LossSettings(**cast(dict[str, Any], OmegaConf.to_container(cfg.loss, resolve=True)),  # cfg.loss: a mapping
                          sim_clip_frames=cfg.data.get("sim_clip_frames", 1))
    # _partial_: LossSettings goes in as it is (Hydra would turn it into a mapping); _convert_: plain containers
    # in hyperparameters, so checkpoints load with weights_only.
    system = instantiate(cfg.system, _partial_=True, _convert_="all")
    discriminators = {name: build_model(cfg.model[name], f"model.{name}")
                      for name in ("discriminator_sim", "discriminator_real")}
    if losses.loss_weights.get("object_adversarial") and "discriminator_object" in cfg.model:
        discriminators["discriminator_object"] = build_model(cfg.model.discriminator_object,
                                                             "model.discriminator_object")
    return system(losses=losses, model=build_model(cfg.model.translator), **discriminators)


def checkpoint_callbacks(run: RunDir, keep: int, validation: bool) -> list[pl.Callback]:
    """``last.ckpt`` and the newest ``keep`` numbered epochs, plus ``best.ckpt`` (best ``val/psnr``) with validation.

    ``last.ckpt`` links to the newest numbered epoch (one write per epoch, not two; a real file when ``keep`` is 0).
    A file of the same name is replaced, never versioned (``-v1``).
    """
    callbacks: list[pl.Callback] = [
        ModelCheckpoint(dirpath=run.checkpoint_dir, filename=EPOCH_PATTERN, auto_insert_metric_name=False,
                        save_last="link", save_top_k=keep, monitor="epoch", mode="max", every_n_epochs=1,
                        save_on_train_epoch_end=True, enable_version_counter=False)]
    if validation:
        callbacks.append(ModelCheckpoint(dirpath=run.checkpoint_dir, filename=Path(BEST).stem, monitor="val/psnr",
                                         mode="max", save_top_k=1, auto_insert_metric_name=False,
                                         enable_version_counter=False))
    return callbacks


def _log_to_run() -> None:
    """Lightning's messages and Python warnings go through the root logger too, so Hydra's ``train.log`` has them."""
    logging.captureWarnings(True)
    for name in ("pytorch_lightning", "lightning_fabric", "lightning.pytorch"):
        logger = logging.getLogger(name)
        logger.propagate = True
        for handler in list(logger.handlers):
            logger.removeHandler(handler)


def chosen_experiments(task_overrides: list[str]) -> list[str]:
    """The experiments of the command line in order: ``experiment=a`` gives ``[a]``, ``experiment=[a,b]`` ``[a, b]``.

    (Hydra's ``runtime.choices`` names a single experiment only.)
    """
    for override in OverridesParser.create().parse_overrides(task_overrides):
        if override.key_or_group == "experiment" and not override.is_delete():
            value = override.value()
            if value is None:
                return []
            return [str(name) for name in value] if isinstance(value, list) else [str(value)]
    return []


def train(cfg: DictConfig) -> Path:
    """Run one training job; returns the run directory.

    Rerunning the same command continues the run from ``last.ckpt`` (exactly: batches are drawn per epoch
    and the RNG states travel in the checkpoint), or does nothing when it has finished; ``resume=`` continues
    any checkpoint with the given settings.
    """
    hydra_config = HydraConfig.get()
    run = RunDir(Path(hydra_config.runtime.output_dir))
    _log_to_run()
    experiments = chosen_experiments(list(hydra_config.overrides.task))
    check_experiment_order(experiments)
    if not experiments and not torch.cuda.is_available():
        log.warning("no experiment given and no GPU: the reference networks train at about a minute per batch on a "
                    "CPU; for a CPU run pass experiment=demo (minutes) or experiment=tiny (seconds)")
    check_training_config(cfg)
    if rank_zero_only.rank == 0:
        for path in run.remove_partial_files():
            log.info("removed %s, left by a job killed while saving", path)
    epochs = int(cfg.trainer.max_epochs)
    if cfg.resume:  # explicit: continue that checkpoint with this config (e.g. more epochs)
        ckpt_path = find_checkpoint(cfg.resume)
        log.info("resuming from %s", ckpt_path)
    else:  # the same command again continues its run
        check_same_settings(run, cfg)
        if run.training_done(epochs):
            log.info("%s has finished its training already (its %d epochs or its time budget); nothing to train "
                     "(translate it with `triton-s2r translate %s ...`, or train on with resume=%s "
                     "trainer.max_epochs=N or a longer trainer.max_time)", run.path, epochs, run.path, run.path)
            return run.path
        ckpt_path = run.last if run.last.is_file() else None
        if ckpt_path is not None:
            log.info("continuing %s from %s (the same command was run before)", run.path, ckpt_path)
    pl.seed_everything(cfg.seed, workers=True)
    datamodule, system = build(cfg)
    if rank_zero_only.rank == 0:
        run.write_config(cfg)
        run.save_training_data(*datamodule.training_data())
    logger = instantiate(cfg.logger) if cfg.get("logger") and cfg.logger.get("_target_") else False
    # Besides the system's own (TritonSystem.configure_callbacks): weight average, non-finite guard, previews, RNG.
    callbacks = checkpoint_callbacks(run, int(cfg.checkpoints.keep), datamodule.has_validation())
    if datamodule.has_validation():
        callbacks.append(TrainingCurves(run.path))
    if cfg.trainer.get("enable_progress_bar", True):
        callbacks.append(ProgressBar())
    trainer = instantiate(cfg.trainer, logger=logger, callbacks=callbacks, plugins=[RunCheckpointIO()])
    trainer.fit(system, datamodule=datamodule, ckpt_path=ckpt_path)
    stopped_by = stop_reason(trainer, epochs)
    if stopped_by is not None:
        if rank_zero_only.rank == 0:
            device = trainer.strategy.root_device  # the module itself is back on the CPU after fit
            peak = torch.cuda.max_memory_reserved(device) / 2**30 if device.type == "cuda" else None
            run.mark_finished(min(trainer.current_epoch, epochs), int(system.batches_done), stopped_by, peak)
        log.info("run directory: %s (checkpoint: %s)", run.path, run.last)
    return run.path


def stop_reason(trainer: pl.Trainer, max_epochs: int) -> str | None:
    """Why a fit ended: ``"max_epochs"``, ``"max_time"`` (its ``trainer.max_time`` budget spent), or None.

    None: it did not run to an end (interrupted, failed).
    """
    if trainer.state.status != "finished" or trainer.interrupted:
        return None
    if trainer.current_epoch >= max_epochs:
        return "max_epochs"
    timer = time_budget(trainer)
    remaining = timer.time_remaining() if timer is not None else None
    return "max_time" if remaining is not None and remaining <= 0 else None


@hydra.main(version_base="1.3", config_path="conf", config_name="train")
def main(cfg: DictConfig) -> None:
    """``triton-s2r train``: train with the composed Hydra config.

    User errors (bad config values, missing data) print one line and exit with status 2.
    """
    try:
        train(cfg)
    except Exception as exc:
        # Hydra wraps what a constructor raises (data.*, system.*): report the constructor's own error.
        error = exc.__cause__ if isinstance(exc, InstantiationException) and exc.__cause__ else exc
        # The run directory keeps why it stopped (a bad value, out of GPU memory, say), in train.log.
        log.error("training failed: %s: %s", type(error).__name__, error)
        if not isinstance(error, USER_ERRORS) or os.environ.get("HYDRA_FULL_ERROR") == "1":
            raise  # Hydra prints the traceback
        print(f"triton-s2r train: error: {error}\n(set HYDRA_FULL_ERROR=1 for the full traceback)", file=sys.stderr)
        raise SystemExit(2) from None


def cli(argv: list[str]) -> int:
    """Entry for ``triton-s2r train``: hand the overrides to Hydra; returns the exit status."""
    sys.argv = ["triton-s2r train", *argv]
    try:
        main()
    except SystemExit as exc:  # Hydra exits on its own errors (1), ours exit with 2
        return exc.code if isinstance(exc.code, int) else 1
    return 0


if __name__ == "__main__":
    main()
