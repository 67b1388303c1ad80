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

import os
import sys
from pathlib import Path

import hydra
import pytorch_lightning as pl
import torch
from hydra.core.hydra_config import HydraConfig
from hydra.utils import instantiate
from lightning_fabric.plugins.io.torch_io import TorchCheckpointIO
from omegaconf import DictConfig, OmegaConf, open_dict
from pytorch_lightning.callbacks import ModelCheckpoint, TQDMProgressBar

from triton_s2r.utils.files import atomic_write

CONFIG_NAME = "config.yaml"
#: Batches between progress-bar refreshes; each reads the logged losses back from the device (a GPU wait).
PROGRESS_EVERY = 10


class ProgressBar(TQDMProgressBar):
    """Lightning's progress bar, refreshed every ``PROGRESS_EVERY`` batches, with the system's last losses
    (``system.progress``), read from the device only at a refresh."""

    def __init__(self) -> None:
        super().__init__(refresh_rate=PROGRESS_EVERY)

    def get_metrics(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> dict:
        losses = {name: f"{value.item():.3g}" for name, value in getattr(pl_module, "progress", {}).items()}
        return {**super().get_metrics(trainer, pl_module), **losses}


class AtomicCheckpointIO(TorchCheckpointIO):
    """Checkpoints written to a temporary file and renamed: a killed job never leaves a broken one."""

    def save_checkpoint(self, checkpoint: dict, path, storage_options=None) -> None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        with atomic_write(path) as tmp:
            torch.save(checkpoint, tmp)


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
        path = path / "checkpoints" / "last.ckpt"
    if not path.is_file():
        raise FileNotFoundError(f"checkpoint not found: {path}; pass resume=<run dir> or resume=<file.ckpt>")
    return path


def build(cfg: DictConfig):
    """Data, system and the resolved config (``num_labels`` filled in from the data)."""
    datamodule = instantiate(cfg.data)
    datamodule.prepare_data()
    datamodule.setup("fit")
    with open_dict(cfg):
        cfg.num_labels = datamodule.labels.num_labels
    system = instantiate(
        cfg.system,
        _convert_="all",  # plain containers in hyperparameters, so checkpoints load with weights_only
        **OmegaConf.to_container(cfg.loss, resolve=True),
        model=instantiate(cfg.model.translator),
        discriminator_sim=instantiate(cfg.model.discriminator_sim),
        discriminator_real=instantiate(cfg.model.discriminator_real),
    )
    return datamodule, system


def train(cfg: DictConfig) -> Path:
    """Run one training job; returns the run directory."""
    run_dir = Path(HydraConfig.get().runtime.output_dir)
    pl.seed_everything(cfg.seed, workers=True)
    ckpt_path = find_checkpoint(cfg.resume) if cfg.resume else None
    datamodule, system = build(cfg)
    with atomic_write(run_dir / CONFIG_NAME) as tmp:
        tmp.write_text(OmegaConf.to_yaml(cfg, resolve=True))
    logger = instantiate(cfg.logger) if cfg.get("logger") and cfg.logger.get("_target_") else False
    checkpoints = ModelCheckpoint(dirpath=run_dir / "checkpoints", filename="epoch{epoch:04d}",
                                  auto_insert_metric_name=False, save_last=True, save_top_k=-1,
                                  every_n_epochs=1, save_on_train_epoch_end=True)
    callbacks = [checkpoints]
    if datamodule.has_validation():  # also keep the epoch with the best validation PSNR as best.ckpt
        callbacks.append(ModelCheckpoint(dirpath=run_dir / "checkpoints", filename="best", monitor="val/psnr",
                                         mode="max", save_top_k=1, auto_insert_metric_name=False))
    if cfg.trainer.get("enable_progress_bar", True):
        callbacks.append(ProgressBar())
    trainer = instantiate(cfg.trainer, logger=logger, callbacks=callbacks, plugins=[AtomicCheckpointIO()])
    trainer.fit(system, datamodule=datamodule, ckpt_path=ckpt_path)
    print(f"run directory: {run_dir} (checkpoint: {run_dir / 'checkpoints' / 'last.ckpt'})")
    return run_dir


@hydra.main(version_base="1.3", config_path="conf", config_name="train")
def main(cfg: DictConfig) -> None:
    train(cfg)


def cli(argv: list[str]) -> int:
    """Entry for ``triton-s2r train``: hand the overrides to Hydra."""
    sys.argv = ["triton-s2r train", *argv]
    main()
    return 0


if __name__ == "__main__":
    main()
