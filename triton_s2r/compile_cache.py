"""Fill Inductor's compile cache with a run's compiled pieces: the child of ``system.compile_in_background``.

``python -m triton_s2r.compile_cache RUN/config.yaml`` trains ``WARMUP_BATCHES`` batches of that config compiled,
writing its checkpoints and logs to a temporary folder; what stays is the compiled code in Inductor's on-disk cache,
which the run (``triton_s2r.training.background_compile.BackgroundCompile``) then compiles from.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import pytorch_lightning as pl
from omegaconf import DictConfig, OmegaConf, open_dict

from triton_s2r.train import build

#: The child's batches: the first has the R1 penalty, the second the surface losses (``loss.surface_losses_from=1``),
#: so between them they call every compiled piece with every input shape of the run's first crop size.
WARMUP_BATCHES = 2


def warm_compile_cache(config: Path) -> None:
    """Train ``WARMUP_BATCHES`` batches of the run config ``config`` compiled (what they write: a temporary folder)."""
    cfg = OmegaConf.load(config)
    assert isinstance(cfg, DictConfig), f"{config} holds no mapping"
    with open_dict(cfg):
        cfg.system.compile_in_background = False
        cfg.loss.surface_losses_from = 1
    pl.seed_everything(int(cfg.seed))
    datamodule, system = build(cfg)
    with tempfile.TemporaryDirectory(prefix="triton_s2r_compile_") as out_dir:
        trainer = pl.Trainer(accelerator=cfg.trainer.accelerator, precision=cfg.trainer.precision, devices=1,
                             max_epochs=1, limit_train_batches=WARMUP_BATCHES, limit_val_batches=0,
                             num_sanity_val_steps=0, logger=False, enable_checkpointing=False,
                             enable_progress_bar=False, enable_model_summary=False, default_root_dir=out_dir)
        trainer.fit(system, datamodule=datamodule)


if __name__ == "__main__":
    warm_compile_cache(Path(sys.argv[1]))
