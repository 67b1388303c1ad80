"""Training on a CUDA GPU: bf16, channels-last, renderer in the loop with nvdiffrast. GPU machine only.

Uses the dataset at ``$TRITON_S2R_TEST_DATA`` when set (the GPU machine cannot build one: no pybullet or
Mitsuba there), else builds the tiny preset.
"""

from __future__ import annotations

import importlib.util
import os

import pytest
import pytorch_lightning as pl
import torch
from hydra import compose, initialize_config_module
from tiny_assets import metric_rows, train_twice_through_a_compile_cache_file

from benchmarks.startup import HANDOVER
from triton_s2r.cli import main
from triton_s2r.runs.run_dir import RunDir
from triton_s2r.train import build
from triton_s2r.training.background_compile import CHILD_LOG, BackgroundCompile

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> str:
    if os.environ.get("TRITON_S2R_TEST_DATA"):
        return os.environ["TRITON_S2R_TEST_DATA"]
    missing = [name for name in ("mitsuba", "pybullet") if importlib.util.find_spec(name) is None]
    if missing:
        pytest.skip(f"building the tiny dataset needs {' and '.join(missing)}: install them, or set "
                    f"TRITON_S2R_TEST_DATA to a dataset built elsewhere (`triton-s2r make-dataset --preset tiny`)")
    root = tmp_path_factory.mktemp("gpu") / "tiny"
    assert main(["make-dataset", "--out", str(root), "--preset", "tiny", "--frames", "8"]) == 0
    return str(root)


#: The tiny experiment on the GPU: nvdiffrast, 64 px crops, one epoch (5 batches); tests add their overrides.
GPU_TINY = ("experiment=tiny", "trainer=gpu", "render=nvdiffrast", "trainer.enable_progress_bar=false",
            "data.build_preset=null", "system.crop_size=64", "system.resolution_schedule=[[0,64]]",
            "trainer.max_epochs=1")


@pytest.mark.parametrize("sim_source", ["render", "frames"])
def test_bf16_training_on_gpu(data: str, tmp_path, sim_source: str) -> None:
    run_dir = tmp_path / sim_source
    assert main(["train", *GPU_TINY, "logger=none", f"data.root={data}", f"data.sim_source={sim_source}",
                 "system.supersample=2", "system.channels_last=true", f"hydra.run.dir={run_dir}"]) == 0
    ckpt = torch.load(run_dir / "checkpoints" / "last.ckpt", weights_only=True, map_location="cpu")
    assert int(ckpt["state_dict"]["batches_done"]) == 5
    assert all(torch.isfinite(v).all() for v in ckpt["state_dict"].values() if v.is_floating_point())
    assert RunDir(run_dir).status()["peak_gpu_memory_gib"] > 0  # what benchmarks.results sizes concurrent runs by


@pytest.mark.parametrize("sim_source", ["render", "frames"])
def test_robot_pairing_renders_the_real_robot_with_nvdiffrast(data: str, tmp_path, sim_source: str) -> None:
    """loss.loss_weights.robot_pairing on the GPU: the real frames' robot rendered by nvdiffrast at the photo crops."""
    run_dir = tmp_path / sim_source
    assert main(["train", *GPU_TINY, "logger=csv", f"data.root={data}", f"data.sim_source={sim_source}",
                 "loss.loss_weights.robot_pairing=10", "trainer.log_every_n_steps=1", f"hydra.run.dir={run_dir}"]) == 0
    values = [float(row["train/robot_pairing"]) for row in metric_rows(run_dir) if row.get("train/robot_pairing")]
    assert len(values) == 5 and all(0 < v < 2 for v in values)


def test_tracked_objects_render_pair_and_shade_the_objects_on_gpu(data: str, tmp_path) -> None:
    """system.tracked_objects on the GPU: the photos' objects rendered by nvdiffrast, compared, and shaded."""
    run_dir = tmp_path / "tracked"
    assert main(["train", *GPU_TINY, "logger=csv", f"data.root={data}", "system.tracked_objects=true",
                 "trainer.log_every_n_steps=1", f"hydra.run.dir={run_dir}"]) == 0
    rows = metric_rows(run_dir)
    for term in ("robot_pairing", "texture_pairing"):
        values = [float(row[f"train/{term}"]) for row in rows if row.get(f"train/{term}")]
        assert len(values) == 5 and all(0 < v < 2 for v in values)
    shaded = torch.load(run_dir / "checkpoints" / "last.ckpt", weights_only=True,
                        map_location="cpu")["state_dict"]["model.shaded_labels"]
    assert shaded[1:].all() and not shaded[0]  # every surface shaded: none left to G_B


@pytest.mark.parametrize("mode, recompute", [("default", False), ("reduce-overhead", True)])
def test_compiled_step_trains_on_gpu(data: str, tmp_path, mode: str, recompute: bool) -> None:
    """system.compile=true compiles each network, the texture and the losses on their own; the run still trains.

    Without CUDA graphs and the texture's activations kept, and as `experiment=paper`: CUDA graphs
    ("reduce-overhead" mode) with the texture recomputed in the backward pass (activation checkpointing inside a
    compiled module). Each is a cold compile of minutes; the later compiled tests reuse the second's graphs.
    """
    run_dir = tmp_path / "compiled"
    assert main(["train", *GPU_TINY, "logger=csv", f"data.root={data}", "data.sim_source=render",
                 "system.compile=true", f"system.compile_mode={mode}", f"hydra.run.dir={run_dir}",
                 f"model.translator.texture.recompute={str(recompute).lower()}"]) == 0
    rows = metric_rows(run_dir)
    assert "train/surface_chroma_consistency" in rows[0]
    losses = [float(r["train/loss_g"]) for r in rows if r.get("train/loss_g")]
    assert losses and all(torch.isfinite(torch.tensor(losses)))
    assert "system.compile: the first batch took" in (run_dir / "train.log").read_text()


def test_a_background_compile_hands_over_to_the_compiled_step_on_gpu(data: str, tmp_path, monkeypatch) -> None:
    """system.compile_in_background: eager batches while the child compiles, then compiled ones from its cache.

    The run stops after its first compiled batch, or after ten minutes: it trains as long as its child compiles, not
    a fixed time that a child on a loaded machine (a card and cores shared with other runs) could outlast.
    """
    first_compiled_batch_end = BackgroundCompile.on_train_batch_end

    def stop_after_the_first_compiled_batch(self, trainer, *args) -> None:
        compiled = self._compiled_batch_start is not None
        first_compiled_batch_end(self, trainer, *args)
        trainer.should_stop = trainer.should_stop or compiled

    monkeypatch.setattr(BackgroundCompile, "on_train_batch_end", stop_after_the_first_compiled_batch)
    run_dir = tmp_path / "background"
    code = main(["train", *GPU_TINY, "logger=csv", f"data.root={data}", "data.sim_source=render",
                 "system.compile=true", "system.compile_mode=reduce-overhead", "system.compile_in_background=true",
                 "trainer.max_epochs=100000", "++trainer.max_time=00:00:10:00", f"hydra.run.dir={run_dir}"])
    log = (run_dir / "train.log").read_text()
    child = run_dir / CHILD_LOG
    assert code == 0, f"{log[-3000:]}\n--- {child} ---\n{child.read_text()[-3000:] if child.is_file() else 'none'}"
    assert "training eagerly while a child process compiles" in log
    handover = HANDOVER.search(log)  # the line benchmarks.startup reads
    assert handover, log[-3000:]
    assert "the first compiled batch took" in log
    rows = metric_rows(run_dir)
    losses = [float(r["train/loss_g"]) for r in rows if r.get("train/loss_g")]
    assert losses and all(torch.isfinite(torch.tensor(losses)))


def test_a_compile_cache_file_serves_a_process_with_empty_caches_on_gpu(data: str, tmp_path, monkeypatch) -> None:
    """system.compile_cache_file with CUDA graphs: one run writes it, a run with an empty cache compiles nothing.

    After test_compiled_step_trains_on_gpu (file order), the first run takes its pieces from the warm cache.
    """
    path = tmp_path / "compiled.bin"
    args = ["train", *GPU_TINY, "logger=csv", f"data.root={data}", "data.sim_source=render", "system.compile=true",
            "system.compile_mode=reduce-overhead", f"system.compile_cache_file={path}"]
    first, second = train_twice_through_a_compile_cache_file(args, tmp_path, monkeypatch)
    assert "compiled pieces to" in first and "compiled pieces from" in second


def test_object_windows_train_compiled_with_cuda_graphs(data: str, tmp_path) -> None:
    """loss.loss_weights.object_adversarial on the GPU: D_O compiled with the other networks, R1 at the first batch."""
    run_dir = tmp_path / "objects"
    assert main(["train", *GPU_TINY, "logger=csv", f"data.root={data}", "data.sim_source=render",
                 "system.compile=true", "system.compile_mode=reduce-overhead", "loss.loss_weights.object_adversarial=1",
                 "system.object_crop_size=32", "trainer.log_every_n_steps=1", f"hydra.run.dir={run_dir}"]) == 0
    values = [float(r["train/object_adversarial"]) for r in metric_rows(run_dir) if r.get("train/object_adversarial")]
    assert len(values) == 5 and all(0 < v < 10 for v in values)


class _FailOnSync(pl.Callback):
    """Any synchronising PyTorch call inside a training step after the first two raises."""

    def on_train_batch_start(self, trainer, module, batch, batch_idx) -> None:
        if batch_idx >= 2:
            torch.cuda.set_sync_debug_mode("error")

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx) -> None:
        torch.cuda.set_sync_debug_mode("default")


def test_training_step_never_waits_for_the_gpu(data: str, tmp_path, monkeypatch) -> None:
    """A training step queues its GPU work without waiting for it.

    That covers rendering in the loop, both optimiser steps, the weight average, the non-finite counts and the
    per-step logging (nvdiffrast's rasterizer waits for its own stream, outside PyTorch), and ℓUC's blur within
    labels.
    """
    with initialize_config_module("triton_s2r.conf", version_base="1.3"):
        cfg = compose("train", overrides=[
            "experiment=tiny", "trainer=gpu", "render=nvdiffrast", f"data.root={data}", "data.build_preset=null",
            "data.sim_source=render", "data.val_frames=0", "system.supersample=2", "system.crop_size=64",
            "system.resolution_schedule=[[0,64]]", "system.preview_every_n_batches=1000", "loss.surface_blur_sigma=1"])
    datamodule, system = build(cfg)
    # The system's own callbacks (weight average, non-finite guard, ...) run at the batch end: check them too.
    own = system.configure_callbacks()
    monkeypatch.setattr(system, "configure_callbacks", lambda: [*own, _FailOnSync()])
    trainer = pl.Trainer(accelerator="gpu", devices=1, precision="bf16-mixed", max_epochs=1, logger=False,
                         enable_checkpointing=False, enable_progress_bar=False, default_root_dir=str(tmp_path))
    try:
        trainer.fit(system, datamodule=datamodule)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert system.batches_trained == 5


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



@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs 2 GPUs")
def test_ddp_ranks_draw_their_own_whole_clips(data: str, tmp_path) -> None:
    """trainer=ddp on 2 GPUs (NCCL) with the default pairs: as the CPU test in test_training.py."""
    import ddp_clips_run

    ddp_clips_run.train_and_check(data, tmp_path)
