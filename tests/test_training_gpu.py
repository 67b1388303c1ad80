"""Training on a CUDA GPU: bf16, channels-last, renderer in the loop with nvdiffrast. GPU machine only.

Uses the dataset at ``$TRITON_S2R_TEST_DATA`` when set (the GPU machine cannot build one: no pybullet or
Mitsuba there), else builds the tiny preset.
"""

from __future__ import annotations

import os

import pytest
import torch

from triton_s2r.cli import main

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> str:
    if os.environ.get("TRITON_S2R_TEST_DATA"):
        return os.environ["TRITON_S2R_TEST_DATA"]
    root = tmp_path_factory.mktemp("gpu") / "tiny"
    assert main(["make-dataset", "--out", str(root), "--preset", "tiny", "--frames", "8"]) == 0
    return str(root)


@pytest.mark.parametrize("sim_source", ["render", "frames"])
def test_bf16_training_on_gpu(data: str, tmp_path, sim_source: str) -> None:
    run_dir = tmp_path / sim_source
    assert main(["train", "experiment=tiny", "trainer=gpu", "render=nvdiffrast", "logger=none",
                 "trainer.enable_progress_bar=false", f"data.root={data}", "data.build_preset=null",
                 f"data.sim_source={sim_source}", "system.supersample=2", "system.channels_last=true",
                 "system.crop_size=64", "system.resolution_schedule=[[0,64]]", "trainer.max_epochs=1",
                 f"hydra.run.dir={run_dir}"]) == 0
    ckpt = torch.load(run_dir / "checkpoints" / "last.ckpt", weights_only=True, map_location="cpu")
    assert int(ckpt["state_dict"]["batches_done"]) == 5
    assert all(torch.isfinite(v).all() for v in ckpt["state_dict"].values() if v.is_floating_point())
