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


@pytest.mark.parametrize("mode", ["default", "reduce-overhead"])
def test_compiled_step_trains_on_gpu(data: str, tmp_path, mode: str) -> None:
    """system.compile=true compiles each network, the texture and the losses on their own (with CUDA graphs
    in "reduce-overhead" mode); the run still trains."""
    run_dir = tmp_path / "compiled"
    assert main(["train", "experiment=tiny", "trainer=gpu", "render=nvdiffrast", "logger=csv",
                 "trainer.enable_progress_bar=false", f"data.root={data}", "data.build_preset=null",
                 "data.sim_source=render", "system.compile=true", f"system.compile_mode={mode}", "system.crop_size=64",
                 "system.resolution_schedule=[[0,64]]", "trainer.max_epochs=1", f"hydra.run.dir={run_dir}"]) == 0
    lines = (run_dir / "csv" / "version_0" / "metrics.csv").read_text().splitlines()
    header, rows = lines[0].split(","), [dict(zip(lines[0].split(","), r.split(","), strict=True)) for r in lines[1:]]
    assert "train/surface_consistency" in header
    losses = [float(r["train/loss_g"]) for r in rows if r.get("train/loss_g")]
    assert losses and all(torch.isfinite(torch.tensor(losses)))


def test_texture_packing_is_sync_free_and_matches_cpu() -> None:
    """The per-pixel neural texture gives the CPU's values on CUDA without any device synchronisation."""
    from triton_s2r.models import NeuralTexture

    texture = NeuralTexture(num_labels=5, num_frequencies=16, hidden_channels=32, tile_size=256, seed=1)
    uv, label = torch.rand(2, 2, 40, 48), torch.randint(0, 6, (2, 40, 48))
    expected = texture(uv, label)
    cuda = texture.cuda()
    uv, label = uv.cuda(), label.cuda()
    torch.cuda.set_sync_debug_mode("error")  # any synchronising call raises
    try:
        result = cuda(uv, label)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    torch.testing.assert_close(result.cpu(), expected, rtol=1e-4, atol=1e-5)
