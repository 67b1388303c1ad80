"""Train experiment=tiny with trainer=ddp on two processes; each rank records what its sampler deals.

A script (Lightning's DDP launcher starts rank 1 by rerunning it): the DDP tests call ``train_and_check(DATA,
OUT, *OVERRIDES)``, which runs ``python tests/ddp_clips_run.py DATA OUT [OVERRIDE ...]`` and asserts on the
records.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytorch_lightning as pl


class _Record(pl.Callback):
    def __init__(self, out: Path) -> None:
        self.out = out

    def on_train_start(self, trainer, module) -> None:
        loader = trainer.train_dataloader
        sim = [k // len(loader.dataset.real) for k in loader.sampler]
        record = {"sampler": type(loader.sampler).__name__, "sim": sim}
        (self.out / f"rank{trainer.global_rank}.json").write_text(json.dumps(record))

    def on_train_end(self, trainer, module) -> None:
        (self.out / f"batches{trainer.global_rank}.txt").write_text(str(int(module.batches_done)))
        weights = {name: [p.detach().double().sum().item() for p in getattr(module, name).parameters()]
                   for name in ("model", "discriminator_sim", "discriminator_real")}
        (self.out / f"weights{trainer.global_rank}.json").write_text(json.dumps(weights))


def train_and_check(data: str, out: Path, *overrides: str) -> None:
    """Run this script, then check that each rank's own sampler dealt whole pairs.

    The two ranks drew different ones, both trained 4 batches and ended with the same weights.
    """
    run = subprocess.run([sys.executable, __file__, data, str(out), *overrides], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    # DDP built on the training stream (training/ddp.py DDPStrategy): no gradient crosses to a side stream.
    assert "AccumulateGrad node's stream does not match" not in run.stderr
    ranks = [json.loads((out / f"rank{r}.json").read_text()) for r in (0, 1)]
    for record in ranks:
        sim = record["sim"]
        assert record["sampler"] == "ClipSampler" and sim  # not Lightning's wrapper, which splits clips
        assert all(a % 2 == 0 and b == a + 1 for a, b in zip(sim[::2], sim[1::2], strict=True)), sim
    assert ranks[0]["sim"] != ranks[1]["sim"]
    assert [(out / f"batches{r}.txt").read_text() for r in (0, 1)] == ["4", "4"]
    # Averaged gradients keep the ranks' weights equal (training/ddp.py averages only the stepped optimizer's).
    weights = [json.loads((out / f"weights{r}.json").read_text()) for r in (0, 1)]
    assert weights[0] == weights[1]


def main(data: str, out: str, *overrides: str) -> None:
    from hydra import compose, initialize_config_module
    from hydra.utils import instantiate

    from triton_s2r.train import build

    with initialize_config_module("triton_s2r.conf", version_base="1.3"):
        cfg = compose("train", overrides=["experiment=tiny", "trainer=ddp", "trainer.devices=2", "logger=none",
                                          f"data.root={data}", "data.build_preset=null", "data.sim_source=frames",
                                          "system.crop_size=48", "trainer.max_epochs=2", *overrides])
    datamodule, system = build(cfg)
    trainer = instantiate(cfg.trainer, logger=False, callbacks=[_Record(Path(out))], enable_checkpointing=False,
                          default_root_dir=out, enable_progress_bar=False)
    trainer.fit(system, datamodule=datamodule)


if __name__ == "__main__":
    main(*sys.argv[1:])
