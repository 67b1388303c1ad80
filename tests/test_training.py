"""Training: every config composes and builds; tiny runs end to end, resume exactly, and fail clearly."""

from __future__ import annotations

import dataclasses
import logging
import math
import os
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
import pytorch_lightning as pl
import torch
import yaml
from hydra import compose, initialize_config_module
from hydra.errors import InstantiationException
from hydra.utils import instantiate
from omegaconf import OmegaConf, open_dict
from tiny_assets import metric_rows

from triton_s2r.cli import main
from triton_s2r.data.datamodule import ClipSampler, EpochSampler, TritonDataModule
from triton_s2r.train import build, build_system, chosen_experiments
from triton_s2r.training.callbacks import CompileNotice, LearningRateDecay, NonFiniteLossError, WeightAverage
from triton_s2r.utils.cuda_memory import ALLOCATOR_ENV

CONF = Path(__file__).resolve().parent.parent / "triton_s2r" / "conf"
EXPERIMENTS = sorted(p.stem for p in (CONF / "experiment").glob("*.yaml"))
TINY = ["experiment=tiny", "trainer.enable_progress_bar=false", "logger=none"]


def composed(overrides: list[str]):
    with initialize_config_module("triton_s2r.conf", version_base="1.3"):
        cfg = compose("train", overrides=overrides)
    with open_dict(cfg):
        cfg.num_labels = 9
    return cfg


def test_sim_networks_follow_the_label_encoding_and_refuse_a_hand_set_width() -> None:
    onehot = ["model.translator.sim_input.label_encoding=onehot"]
    assert build_system(composed([])).discriminator_sim.in_channels == 6
    system = build_system(composed(onehot))
    assert system.model.sim_input.out_channels == system.model.generator_sim.in_channels == 15
    assert system.discriminator_sim.in_channels == 15
    with pytest.raises(InstantiationException, match="generator_sim.in_channels"):  # Hydra wraps the model's error
        build_system(composed([*onehot, "model.translator.generator_sim.in_channels=6"]))
    with pytest.raises(ValueError, match=r"discriminator_sim.in_channels at its default, which follows x_a \(15\)"):
        build_system(composed([*onehot, "model.discriminator_sim.in_channels=6"]))


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_every_experiment_composes_and_builds(experiment: str) -> None:
    cfg = composed([f"experiment={experiment}"])
    system = build_system(cfg)
    model = system.model
    assert system.model.sim_input.out_channels == cfg.model.discriminator_sim.in_channels
    assert set(system.loss_weights) == set(type(system).loss_terms)
    if experiment == "oracle":
        assert type(system).__name__ == "PairedSystem" and cfg.data.paired
        assert system.loss_weights == {"adversarial": 1.0, "paired": 100.0}
    if experiment == "no_texture":
        assert model.sim_input.texture_multiplier == 0 and system.loss_weights["texture_reality"] == 0
    if experiment in ("no_texture", "texture_only"):  # no surface losses
        assert system.loss_weights["surface_consistency"] == system.loss_weights["surface_chroma_consistency"] == 0
    if experiment == "texture_only":
        assert model.sim_input.hint_multiplier == 0
    if experiment == "raster_texture":
        assert type(model.texture).__name__ == "RasterTexture"
    if experiment == "shaded":  # the decoder draws one grey gain channel more; ℓTR off
        assert model.shading_channels == model.generator_real.extra_out_channels == 1
        assert system.loss_weights["texture_reality"] == 0 and system.hparams.texture_lr_factor == 1
    if experiment == "cyclegan":  # CycleGAN's objective: adversarial + L1 cycle, UVL visualisation only
        assert model.sim_input.texture_multiplier == 0 and system.losses.criterion == "l1"
        assert {k for k, w in system.loss_weights.items() if w} == {"adversarial", "cycle"}
        assert system.loss_weights["cycle"] == 10 and len(system.discriminator_real.scales) == 1


@pytest.mark.parametrize("scale", ["tiny", "demo"])
@pytest.mark.parametrize("experiment", [e for e in EXPERIMENTS if e not in ("tiny", "demo")])
def test_every_experiment_builds_at_the_small_scales(scale: str, experiment: str) -> None:
    """experiment=[SCALE,EXPERIMENT]: the scale's sizes do not leak into the experiment's own choices."""
    system = build_system(composed([f"experiment=[{scale},{experiment}]"]))
    texture = system.model.texture
    if experiment == "raster_texture":
        assert type(texture).__name__ == "RasterTexture"
    else:  # the scale's narrow texture: tiny's tiles, demo's activations kept
        assert (texture.tile_size, texture.recompute) == ((1024, True) if scale == "tiny" else (4096, False))


def test_a_scale_after_another_experiment_is_refused(data_root, tmp_path, capsys) -> None:
    """experiment=[raster_texture,tiny] would train tiny's neural texture: refused, naming the order that works."""
    out = tmp_path / "order"
    assert main(["train", "experiment=[raster_texture,tiny]", f"data.root={data_root}", f"hydra.run.dir={out}"]) == 2
    err = capsys.readouterr().err
    assert "the scale (tiny) must come first" in err and "write experiment=[tiny,raster_texture]" in err
    assert not (out / "config.yaml").exists()
    assert chosen_experiments(["seed=1", "experiment=[tiny,raster_texture]"]) == ["tiny", "raster_texture"]
    assert chosen_experiments(["experiment=demo"]) == ["demo"] and chosen_experiments(["seed=1"]) == []


def test_learning_rates_of_the_optimisers_follow_their_factors() -> None:
    system = build_system(composed(["system.lr=2e-4", "system.discriminator_lr_factor=4"]))
    opt_g, opt_d = system.configure_optimizers()
    assert {g["name"]: g["lr"] for g in opt_g.param_groups} == {"generator": 2e-4, "texture": pytest.approx(2e-3)}
    assert [g["lr"] for g in opt_d.param_groups] == [pytest.approx(8e-4)]
    assert sum(p.numel() for g in opt_d.param_groups for p in g["params"]) == sum(
        p.numel() for d in (system.discriminator_sim, system.discriminator_real) for p in d.parameters())


def test_learning_rates_decay_linearly_to_zero_over_the_end_of_the_budget(data_root, tmp_path) -> None:
    # Four batches, decay from half way: batch 3 (progress 2/4) trains at the full rates, batch 4 (3/4) at half.
    run_dir = run(tmp_path, "decay", data_root, "trainer.max_epochs=1", "data.steps_per_epoch=4",
                  "system.lr=2e-4", "system.lr_decay_from=0.5")
    optimizers = torch.load(run_dir / "checkpoints" / "last.ckpt", weights_only=False)["optimizer_states"]
    rates = {g["name"]: (g["lr"], g["base_lr"]) for o in optimizers for g in o["param_groups"]}
    assert rates == {"generator": (pytest.approx(1e-4), 2e-4), "texture": (pytest.approx(1e-3), pytest.approx(2e-3)),
                     "discriminator": (pytest.approx(1e-4), 2e-4)}
    decay = LearningRateDecay(0.5)
    assert [decay.factor(p) for p in (0.0, 0.5, 0.75, 1.0)] == [1.0, 1.0, 0.5, 0.0]
    with pytest.raises(ValueError, match="lr_decay_from and system.lr_step_size are two schedules"):
        build_system(composed(["system.lr_decay_from=0.5", "system.lr_step_size=1000"]))
    with pytest.raises(ValueError, match=r"must be in \[0, 1\)"):
        LearningRateDecay(1.0)


@pytest.mark.parametrize(("batches", "recent"), [(1_000, 74), (12_000, 693)])
def test_half_the_weight_average_lies_on_the_recent_batches_that_training_md_names(batches, recent) -> None:
    # docs/training.md#weight-average: the last 74 batches at batch 1,000 (the warm-up's share of the run), the last
    # 693 once the decay 0.999 holds. The weight is 1 over those batches and 0 before: the average reads about 0.5.
    model = torch.nn.Linear(1, 1, bias=False)
    system = SimpleNamespace(model=model, batches_trained=0)
    average = WeightAverage(0.999)
    average.setup(None, system, "fit")  # pyright: ignore[reportArgumentType]  # the hooks read these attributes only
    for t in range(batches):
        with torch.no_grad():
            model.weight.fill_(float(t >= batches - recent))
        system.batches_trained = t + 1
        average.on_train_batch_end(None, system, None, None, t)  # pyright: ignore[reportArgumentType]
    assert system.model_ema.weight.item() == pytest.approx(0.5, abs=0.01)


def test_a_compiled_run_says_that_its_first_batch_compiles_and_how_long_it_took(data_root, tmp_path, caplog) -> None:
    notices = [[type(c) for c in build_system(composed([f"system.compile={on}"])).configure_callbacks()].count(
        CompileNotice) for on in ("true", "false")]
    assert notices == [1, 0]
    datamodule, system = build(composed([*TINY, f"data.root={data_root}", "data.val_frames=0"]))
    trainer = pl.Trainer(accelerator="cpu", max_steps=3, logger=False, enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False, callbacks=[CompileNotice()],
                         default_root_dir=tmp_path)
    with caplog.at_level(logging.INFO, logger="triton_s2r.training.callbacks"):
        trainer.fit(system, datamodule=datamodule)
    messages = [r.getMessage() for r in caplog.records if r.name == "triton_s2r.training.callbacks"]
    assert len(messages) == 2, messages  # once per fit, not per batch
    assert "the first batch compiles the networks" in messages[0]
    assert re.fullmatch(r"system\.compile: the first batch took \d+ s, compilation included", messages[1])


def test_crops_too_small_for_the_discriminator_scales_are_refused() -> None:
    assert len(build_system(composed([])).discriminator_real.scales) == 4  # the default: 4 scales on 256² crops
    cfg = composed(["system.crop_size=96", "system.resolution_schedule=[[0,112]]"])
    with pytest.raises(ValueError, match="need crops of at least 121 px; raise system.crop_size or lower"):
        build_system(cfg)


def test_unknown_compile_mode_is_refused() -> None:
    cfg = composed(["experiment=tiny", "system.compile_mode=fastest"])
    with pytest.raises(ValueError, match="compile_mode must be one of"):
        build_system(cfg)


def test_the_activation_memory_budget_reaches_the_partitioner_of_compiled_runs_only() -> None:
    import torch._functorch.config as functorch_config

    with functorch_config.patch(activation_memory_budget=1.0):  # the test leaves the process setting as it was
        build_system(composed(["system.activation_memory_budget=0.5"]))  # eager: the partitioner is not used
        assert functorch_config.activation_memory_budget == 1.0
        build_system(composed(["system.compile=true", "system.activation_memory_budget=0.5"]))
        assert functorch_config.activation_memory_budget == 0.5
    assert composed(["experiment=paper"]).system.activation_memory_budget == 0.5  # the CUDA-graph recipe
    with pytest.raises(ValueError, match=r"activation_memory_budget must be in \(0, 1\], got 0"):
        build_system(composed(["system.activation_memory_budget=0"]))


def test_the_default_trainer_picks_bf16_where_the_device_runs_it(monkeypatch) -> None:
    import triton_s2r.conf as conf

    def precision(overrides: list[str], cuda: bool, cuda_bf16: bool, cpu_bf16: bool) -> str:
        monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
        monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *_, **__: cuda_bf16)
        monkeypatch.setattr(conf, "cpu_has_bf16", lambda: cpu_bf16)
        return composed(overrides).trainer.precision

    demo = ["experiment=demo"]
    assert precision(demo, cuda=False, cuda_bf16=False, cpu_bf16=True) == "bf16-mixed"
    assert precision(demo, cuda=False, cuda_bf16=False, cpu_bf16=False) == "32-true"
    assert precision(demo, cuda=True, cuda_bf16=True, cpu_bf16=False) == "bf16-mixed"
    assert precision(demo, cuda=True, cuda_bf16=False, cpu_bf16=True) == "32-true"  # the GPU trains, not the CPU
    assert precision([*demo, "trainer.accelerator=cpu"], cuda=True, cuda_bf16=False, cpu_bf16=True) == "bf16-mixed"
    assert precision([*demo, "trainer.accelerator=mps"], cuda=False, cuda_bf16=False, cpu_bf16=True) == "32-true"
    assert precision(["trainer=cpu"], cuda=False, cuda_bf16=False, cpu_bf16=True) == "32-true"  # stated, kept
    assert precision(["trainer=gpu"], cuda=False, cuda_bf16=False, cpu_bf16=False) == "bf16-mixed"


def test_a_bf16_run_on_the_cpu_trains(data_root, tmp_path) -> None:
    run_dir = run(tmp_path, "bf16", data_root, "trainer.max_epochs=1", "data.steps_per_epoch=2",
                  "trainer.precision=bf16-mixed")
    assert yaml.safe_load((run_dir / "config.yaml").read_text())["trainer"]["precision"] == "bf16-mixed"
    state = torch.load(run_dir / "checkpoints" / "last.ckpt", weights_only=False)["state_dict"]
    assert state["batches_done"] == 2
    assert all(torch.isfinite(v).all() for v in state.values() if v.is_floating_point())


def test_training_asks_for_expandable_cuda_segments_unless_the_user_chose(data_root, monkeypatch) -> None:
    """build() sets PYTORCH_CUDA_ALLOC_CONF before anything allocates on a GPU, and keeps a value the user set."""
    cfg = composed([*TINY, f"data.root={data_root}"])
    monkeypatch.delenv(ALLOCATOR_ENV, raising=False)
    build(cfg)
    assert os.environ[ALLOCATOR_ENV] == "expandable_segments:True"
    monkeypatch.setenv(ALLOCATOR_ENV, "max_split_size_mb:128")
    build(cfg)
    assert os.environ[ALLOCATOR_ENV] == "max_split_size_mb:128"


@pytest.mark.parametrize("group", ["trainer=cpu", "trainer=gpu", "trainer=ddp", "logger=csv", "logger=wandb",
                                   "logger=none", "render=nvdiffrast", "data=folders",
                                   "model/texture@model.translator.texture=raster"])
def test_every_group_option_composes(group: str) -> None:
    cfg = composed([group, "data.sim_dir=a", "data.real_dir=b", "data.labels.names=[x]", "data.labels.values=[9]"]
                   if group == "data=folders" else [group])
    OmegaConf.to_container(cfg.model, resolve=True)  # every interpolation resolves
    OmegaConf.to_container(cfg.data, resolve=True)
    if group == "trainer=cpu":
        trainer = instantiate(cfg.trainer, default_root_dir="x", logger=False)
        assert trainer.max_epochs == cfg.trainer.max_epochs


def run(tmp: Path, name: str, data: Path, *extra: str) -> Path:
    out = tmp / name
    assert main(["train", *TINY, f"data.root={data}", f"hydra.run.dir={out}", *extra]) == 0
    return out


def fails(tmp: Path, name: str, data: Path, *extra: str) -> None:
    """Training refuses with exit status 2 (a one-line error on stderr, no traceback)."""
    assert main(["train", *TINY, f"data.root={data}", f"hydra.run.dir={tmp / name}", *extra]) == 2


def test_tiny_run_leaves_config_checkpoint_and_previews(run_dir, data_root, manifest) -> None:
    """The session's one-epoch tiny run (conftest.TINY_RUN); tests/test_run_dir.py checks best.ckpt over epochs."""
    num_labels = len(manifest["labels"]["names"])
    cfg = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert cfg["num_labels"] == num_labels and cfg["data"]["root"] == str(data_root)
    batches = cfg["data"]["steps_per_epoch"] * cfg["trainer"]["max_epochs"]
    ckpt = torch.load(run_dir / "checkpoints" / "last.ckpt", weights_only=False)
    assert ckpt["state_dict"]["batches_done"] == batches
    assert any(k.startswith("model.texture.") for k in ckpt["state_dict"])
    assert "model.texture.frequencies" in ckpt["state_dict"]  # the Fourier frequencies travel with the weights
    assert len(ckpt["optimizer_states"]) == 2 and "rng" in ckpt
    every = cfg["system"]["preview_every_n_batches"]
    previews = [f"batch_{b:07d}.png" for b in range(every, batches + 1, every)]
    assert previews and sorted(p.name for p in (run_dir / "previews").glob("batch_*.png")) == previews
    assert len(list((run_dir / "previews").glob("textures_*.png"))) == len(previews)
    rows = metric_rows(run_dir)
    for term in ("train/surface_chroma_consistency", "train/texture_reality", "train/adversarial", "train/loss_d"):
        assert term in rows[0]
    # The resolution schedule stepped up within the epoch, without a restart.
    (_, low), (step, high) = cfg["system"]["resolution_schedule"]
    assert 0 < step < batches and low != high
    resolution = [float(row["train/resolution"]) for row in rows if row["train/resolution"]]
    assert len(resolution) == batches and resolution[0] == low and resolution[-1] == high
    # Paired test frames are scored after each epoch.
    psnr = [float(row["val/psnr"]) for row in rows if row["val/psnr"]]
    assert len(psnr) == cfg["trainer"]["max_epochs"] and all(5 < value < 60 for value in psnr)
    assert all(float(row["val/surface_consistency"]) >= 0 for row in rows if row["val/psnr"])
    assert not list(run_dir.rglob(".*.ckpt"))  # no temporary checkpoint files
    from triton_s2r.inference.translator import Translator  # best.ckpt loads by name

    assert Translator.from_run_dir(run_dir, checkpoint="best", device="cpu").num_labels == num_labels


def test_surface_losses_join_after_the_configured_batches(data_root, tmp_path) -> None:
    run_dir = run(tmp_path, "late", data_root, "logger=csv", "trainer.max_epochs=1", "data.steps_per_epoch=3",
                  "loss.surface_losses_from=2",
                  "loss.loss_weights.surface_consistency=5")  # the plain form beside the default chroma form
    rows = metric_rows(run_dir)
    batches = [row for row in rows if row["train/adversarial"]]  # one row per training batch
    assert len(batches) == 3
    for term in ("train/surface_consistency", "train/surface_chroma_consistency", "train/texture_reality"):
        assert [bool(row[term]) for row in batches] == [False, False, True]


def test_training_metrics_are_logged_in_the_batches_the_loggers_write(data_root, tmp_path) -> None:
    """Every ``log_every_n_steps``-th batch carries every train metric; the batches between log nothing.

    With the relative clip on, whose norms the logs then take (the curves test covers the plain norms).
    """
    run_dir = run(tmp_path, "every2", data_root, "logger=csv", "trainer.max_epochs=1", "data.steps_per_epoch=4",
                  "trainer.log_every_n_steps=2", "system.gradient_clip_ratio=3")
    rows = metric_rows(run_dir)
    train = [row for row in rows if row["train/loss_g"]]
    assert [int(row["step"]) for row in train] == [1, 3]  # batches 2 and 4
    for name in ("train/adversarial", "train/loss_d", "train/resolution", "train/nonfinite_steps"):
        assert all(row[name] for row in train), name
    for phase in ("d", "g"):  # each phase's norm before clipping, its peak since the last validation, the clips
        for row in train:
            norm, peak = float(row[f"train/gradient_norm_{phase}"]), float(row[f"train/gradient_norm_{phase}_peak"])
            assert 0 < norm <= peak < float("inf") and 0 <= float(row[f"train/gradient_clipped_{phase}"]) <= 4


def test_a_missing_benchmark_is_built_by_the_builder_handed_over(tmp_path) -> None:
    """``triton-s2r train`` hands ``make_dataset`` over; the data wing never imports the generator itself."""
    calls = []
    root = str(tmp_path / "data")
    data = TritonDataModule(root=root, build_preset="tiny", sim_clip_frames=2, batch_size=4,
                            builder=lambda out, **kwargs: calls.append((out, kwargs)))
    data.prepare_data()
    assert calls == [(root, {"preset": "tiny", "seed": 0, "sim_clip_frames": 2})]
    with pytest.raises(ValueError, match="needs a builder: pass builder=triton_s2r.tabletop.dataset.make_dataset"):
        TritonDataModule(root=root, build_preset="tiny").prepare_data()
    TritonDataModule(root=root, build_preset=None).prepare_data()  # no preset: setup() says what is missing


def test_clip_sampler_yields_whole_clips_in_order() -> None:
    sampler = ClipSampler(num_sim=13, num_real=5, sim_clip_frames=3, num_samples=30, seed=1)  # sim frame 12: no clip
    sim, real = zip(*(divmod(k, 5) for k in sampler), strict=True)  # UnpairedDataset's index: sim * 5 + real
    clips = [sim[k:k + 3] for k in range(0, 30, 3)]
    assert all(c[0] % 3 == 0 and list(c) == [c[0], c[0] + 1, c[0] + 2] for c in clips), clips
    assert len(set(clips)) > 1 and len(set(real)) > 1 and max(real) < 5 and max(sim) < 12
    assert list(sampler) == list(ClipSampler(13, 5, 3, 30, 1))  # reproducible per (seed, epoch)
    sampler.set_epoch(1)
    assert [divmod(k, 5)[0] for k in sampler] != list(sim)
    with pytest.raises(ValueError, match="2 sim frame"):
        ClipSampler(2, 5, 3, 30, 1)


def test_samplers_under_ddp_draw_each_rank_its_own_share() -> None:
    """Each rank draws its own whole clips, different from the other ranks'.

    A rank's share of the epoch is rounded up to whole clips; rank 0 of one process draws what a single process
    draws.
    """
    streams = []
    for rank in range(3):
        sim = [k // 3 for k in ClipSampler(num_sim=40, num_real=3, sim_clip_frames=2, num_samples=24, seed=0,
                                           rank=rank, world_size=3)]
        assert len(sim) == 8 and all(a % 2 == 0 and b == a + 1 for a, b in zip(sim[::2], sim[1::2], strict=True))
        streams.append(sim)
    assert streams[0] != streams[1] != streams[2]
    assert list(EpochSampler(50, 10, 0, rank=1, world_size=2)) != list(EpochSampler(50, 10, 0, rank=0, world_size=2))
    assert list(EpochSampler(50, 10, 0, rank=0, world_size=1)) == list(EpochSampler(50, 10, 0))
    assert len(EpochSampler(50, 10, 0, rank=0, world_size=3)) == 4


def test_state_indices_reach_the_step_as_ints() -> None:
    """The transfer hook hands the render indices over as a list of ints: no tensor for DDP's forward to move."""
    batch = {"real": torch.zeros(2, 3, 4, 4), "state": torch.tensor([7, 3])}
    moved = TritonDataModule(root="unused").transfer_batch_to_device(batch, torch.device("cpu"), 0)
    assert moved["state"] == [7, 3] and all(type(i) is int for i in moved["state"])
    assert isinstance(moved["real"], torch.Tensor)


@pytest.mark.slow
def test_ddp_ranks_draw_their_own_whole_clips_on_cpu(data_root, tmp_path) -> None:
    """trainer=ddp on two gloo CPU processes: each rank's own ClipSampler deals whole clips, the ranks different ones.

    This is with the default pairs; Lightning's distributed wrapper, which shuffles indices across ranks, is off. The
    GPU tier runs the same on two GPUs. Slow tier; the default tier checks the samplers
    (test_samplers_under_ddp_draw_each_rank_its_own_share) and the data module under a two-rank trainer
    (test_tiny_run_with_sim_clips_and_its_errors).
    """
    import ddp_clips_run

    ddp_clips_run.train_and_check(str(data_root), tmp_path, "trainer.accelerator=cpu", "trainer.precision=32",
                                  "render=embree")


def test_tiny_run_with_sim_clips_and_its_errors(run_dir, data_root, manifest, tmp_path, capsys) -> None:
    """The benchmark's default: train_sim in pairs, plain ℓUC within each pair (the session run trained so)."""
    clip = manifest["splits"]["train_sim"]["clip_frames"]
    assert clip == 2  # make-dataset's default, which this test is about
    data = TritonDataModule(root=str(data_root), batch_size=4, sim_clip_frames=clip, num_workers=0)
    data.setup("fit")
    assert isinstance(data.train_dataloader().sampler, ClipSampler)
    # Under DDP each rank draws its own clips; Lightning's wrapper, which would split them, is refused.
    data.trainer = SimpleNamespace(world_size=2, global_rank=1,
                                   _accelerator_connector=SimpleNamespace(use_distributed_sampler=False))
    assert data.train_dataloader().sampler.rank == 1
    data.trainer._accelerator_connector.use_distributed_sampler = True
    with pytest.raises(ValueError, match="trainer.use_distributed_sampler=false"):
        data.train_dataloader()
    ckpt = torch.load(run_dir / "checkpoints" / "last.ckpt", weights_only=False)
    assert ckpt["hyper_parameters"]["losses"]["sim_clip_frames"] == clip  # plain ℓUC within each clip
    header = metric_rows(run_dir)[0]
    assert "train/surface_consistency" in header and "train/surface_chroma_consistency" in header
    assert "train/photo_score" in header  # D_B's score of the training photos, beside val/photo_score
    fails(tmp_path, "x", data_root, "data.sim_clip_frames=4")  # the dataset's clips are pairs
    assert f"train_sim holds clips of {clip} frame(s), but data.sim_clip_frames=4" in capsys.readouterr().err
    fails(tmp_path, "y", data_root, "data.sim_clip_frames=3")  # tiny batches hold 4 frames
    assert "data.batch_size=4 must hold whole clips of data.sim_clip_frames=3" in capsys.readouterr().err


def test_resume_continues_exactly_and_the_curves_go_on(data_root, tmp_path) -> None:
    """The default tier's resume check, on one-batch epochs.

    1 + 1 batches after ``resume=`` equal 2 in one go (weights, optimiser moments, weight average; the resolution
    schedule steps up at the resume), and curves.csv gets a row per validation, the resumed run appending with its
    clock going on. The slow tier repeats both on whole tiny epochs (test_resume_continues_exactly,
    test_curves_record_every_validation_and_continue_on_resume).
    """
    from triton_s2r.runs.run_dir import load_model_weights
    from triton_s2r.training.curves import read_curves

    short = ("data.steps_per_epoch=1", "system.resolution_schedule=[[0,48],[1,56]]", "system.ema_decay=0.9")
    straight = run(tmp_path, "straight", data_root, "trainer.max_epochs=2", *short)
    resumed = run(tmp_path, "resumed", data_root, "trainer.max_epochs=1", *short)
    first = read_curves(resumed / "curves.csv")
    run(tmp_path, "resumed", data_root, "trainer.max_epochs=2", *short, f"resume={resumed}")
    a = torch.load(straight / "checkpoints" / "last.ckpt", weights_only=False)["state_dict"]
    b = torch.load(resumed / "checkpoints" / "last.ckpt", weights_only=False)["state_dict"]
    assert a.keys() == b.keys() and int(b["batches_done"]) == 2
    for key in a:
        torch.testing.assert_close(a[key], b[key], rtol=1e-5, atol=1e-6, msg=lambda m, k=key: f"{k}: {m}")
    key = "generator_real.decoder.layers.0.weight"  # the weight average trails the weights; inference loads it
    assert not torch.allclose(b[f"model_ema.{key}"], b[f"model.{key}"])
    assert torch.equal(load_model_weights(resumed / "checkpoints" / "last.ckpt")[key], b[f"model_ema.{key}"])
    rows = read_curves(resumed / "curves.csv")
    assert len(first) == 1 and rows[0] == first[0]
    assert [row["batch"] for row in rows] == [1, 2] and [row["epoch"] for row in rows] == [0, 1]
    assert 0 < rows[0]["wall_s"] < rows[1]["wall_s"]
    for row in rows:
        assert 5 < row["val/psnr"] < 60 and 0 < row["val/haarpsi"] <= 1 and row["val/warp_error"] > 0
        assert math.isfinite(row["val/photo_score"])  # D_B's score of the held-out photos


def test_a_validation_video_that_cannot_be_written_warns_once_and_training_goes_on(data_root, tmp_path,
                                                                                   monkeypatch) -> None:
    """Without ffmpeg (or with a full disk) the run still trains, validates and keeps its curves."""
    import triton_s2r.inference.video as video
    from triton_s2r.training.curves import read_curves

    calls = []

    def no_ffmpeg(out, *, fps=10.0):
        calls.append(out)
        raise ImportError("writing mp4 needs imageio-ffmpeg")

    monkeypatch.setattr(video, "frame_writer", no_ffmpeg)
    with pytest.warns(UserWarning, match=r"val_sequence\.mp4 was not written \(writing mp4 needs imageio-ffmpeg\)"):
        out = run(tmp_path, "no_video", data_root, "trainer.max_epochs=2", "data.steps_per_epoch=1",
                  "system.resolution_schedule=[[0,48]]")
    assert [row["batch"] for row in read_curves(out / "curves.csv")] == [1, 2]
    assert len(calls) == 1 and not (out / "previews" / "val_sequence.mp4").exists()
    assert int(torch.load(out / "checkpoints" / "last.ckpt", weights_only=False)["state_dict"]["batches_done"]) == 2


def test_the_curves_minute_axis_goes_on_past_the_validations_at_their_end_rates() -> None:
    """The top axis maps batches to minutes through the validations and beyond them, and back.

    Ticks before the first validation and after the last used to pile up on the range's ends (a clamped map).
    """
    import numpy as np

    from triton_s2r.training.curves import minutes_axis

    to_minutes, to_batches = minutes_axis(np.array([150.0, 300.0, 1200.0]), np.array([1.0, 2.0, 5.0]))
    batches = np.array([0.0, 150.0, 750.0, 1200.0, 1500.0])
    assert np.allclose(to_minutes(batches), [0.0, 1.0, 3.5, 5.0, 6.0])  # 1/150 min a batch early, 1/300 late
    assert np.allclose(to_batches(to_minutes(batches)), batches)


@pytest.mark.slow
def test_curves_record_every_validation_and_continue_on_resume(data_root, tmp_path) -> None:
    """curves.csv gets a row per validation, the plot and the validation video are written, and a resume appends.

    A row holds the batch, the wall time, every val/ measure and the training values last logged before it (the
    discriminators' scores, the losses); a resumed run appends to the same file with its clock going on.
    """
    from PIL import Image

    from triton_s2r.training.curves import read_curves

    run_dir = run(tmp_path, "curves", data_root, "trainer.max_epochs=1")
    first = read_curves(run_dir / "curves.csv")
    run(tmp_path, "curves", data_root, "trainer.max_epochs=2", f"resume={run_dir}")
    rows = read_curves(run_dir / "curves.csv")
    assert rows[0] == first[0] and [row["batch"] for row in rows] == [5, 10] and [r["epoch"] for r in rows] == [0, 1]
    assert 0 < rows[0]["wall_s"] < rows[1]["wall_s"]
    for row in rows:
        assert 5 < row["val/psnr"] < 60 and 5 < row["val/psnr_masked"] < 60 and 0 < row["val/haarpsi"] <= 1
        assert row["val/surface_consistency"] > 0 and row["val/warp_error"] > 0
        assert row["train/loss_d"] > 0 and row["train/adversarial"] > 0
        assert 0 < row["train/gradient_norm_d"] <= row["train/gradient_norm_d_peak"]
        assert 0 < row["train/gradient_norm_g"] <= row["train/gradient_norm_g_peak"]
        assert "train/gradient_clipped_d" not in row  # counted under a relative clip only
        for score in ("photo_score", "translation_score", "render_score", "real_to_sim_score"):  # D_B's, D_A's
            assert math.isfinite(row[f"train/{score}"])
    assert Image.open(run_dir / "plots" / "curves.png").size[0] > 500
    assert (run_dir / "previews" / "val_sequence.mp4").stat().st_size > 1000


@pytest.mark.slow
def test_wandb_offline_run_receives_curves_previews_and_the_validation_video(data_root, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("WANDB_MODE", "offline")  # never the network
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    run_dir = run(tmp_path, "wandb", data_root, "logger=wandb", "trainer.max_epochs=1")
    media = list((run_dir / "wandb").glob("offline-run-*/files/media"))
    assert media, f"no offline W&B run under {run_dir / 'wandb'}"
    assert list(media[0].rglob("*.mp4")) and list(media[0].rglob("*.png"))


@pytest.mark.slow
def test_resume_continues_exactly(data_root, tmp_path) -> None:
    """N+M batches in one go equal N, then M after a resume: weights, optimiser moments, weight average."""
    ema = "system.ema_decay=0.9"
    straight = run(tmp_path, "straight", data_root, "trainer.max_epochs=2", ema)
    first = run(tmp_path, "first", data_root, "trainer.max_epochs=1", ema)
    resumed = run(tmp_path, "resumed", data_root, "trainer.max_epochs=2", ema, f"resume={first}")
    a = torch.load(straight / "checkpoints" / "last.ckpt", weights_only=False)["state_dict"]
    b = torch.load(resumed / "checkpoints" / "last.ckpt", weights_only=False)["state_dict"]
    assert a.keys() == b.keys()
    for key in a:
        torch.testing.assert_close(a[key], b[key], rtol=1e-5, atol=1e-6, msg=lambda m, k=key: f"{k}: {m}")
    assert int(b["batches_done"]) == 10
    # The weight average trails the trained weights, and it is what inference loads.
    from triton_s2r.runs.run_dir import load_model_weights

    key = "generator_real.decoder.layers.0.weight"
    assert not torch.allclose(b[f"model_ema.{key}"], b[f"model.{key}"])
    assert torch.equal(load_model_weights(resumed / "checkpoints" / "last.ckpt")[key], b[f"model_ema.{key}"])


def test_renderer_in_the_loop_trains_on_cpu(data_root, tmp_path, capfd) -> None:
    out = tmp_path / "render"
    assert main(["train", "experiment=tiny", "logger=none", f"data.root={data_root}", f"hydra.run.dir={out}",
                 "data.sim_source=render", "system.supersample=2", "trainer.max_epochs=1",
                 "data.steps_per_epoch=2"]) == 0
    assert (out / "checkpoints" / "last.ckpt").is_file()
    # The progress bar shows the last losses (read from the device only when it refreshes).
    bar = capfd.readouterr().out
    assert "loss_g=" in bar and "loss_d=" in bar


def test_oracle_trains_on_aligned_pairs(data_root, manifest, tmp_path) -> None:
    run_dir = tmp_path / "oracle"
    assert main(["train", "experiment=[tiny,oracle]", "trainer.enable_progress_bar=false", "logger=csv",
                 "trainer.max_epochs=1", "data.steps_per_epoch=2", f"data.root={data_root}",
                 f"hydra.run.dir={run_dir}"]) == 0
    header = metric_rows(run_dir)[0]
    assert {"train/paired", "train/adversarial", "val/psnr"} <= set(header)
    assert "train/cycle" not in header
    from triton_s2r.inference.translator import Translator  # the run loads like any other

    assert Translator.from_run_dir(run_dir, device="cpu").num_labels == len(manifest["labels"]["names"])


def test_paired_augmentation_keeps_pairs_aligned() -> None:
    from triton_s2r.data.augment import augment_paired

    # Every pixel's photo encodes its own label and UV, so misaligned crops would break the equalities.
    label = torch.randint(0, 9, (3, 40, 52))
    uv = torch.rand(3, 2, 40, 52)
    photo = torch.cat([uv, label[:, None].float() / 10], dim=1)
    uv_c, label_c, photo_c = augment_paired(uv, label, photo, short_side=40, crop=32)
    assert uv_c.shape == (3, 2, 32, 32) and label_c.shape == (3, 32, 32) and photo_c.shape == (3, 3, 32, 32)
    torch.testing.assert_close(photo_c[:, :2], uv_c)
    torch.testing.assert_close(photo_c[:, 2] * 10, label_c.float())


def test_centre_crop_photos_resizes_to_the_short_side_and_keeps_the_middle() -> None:
    from triton_s2r.data.augment import centre_crop_photos

    # Each pixel holds its column's centre as a fraction of the width, which a resize keeps.
    columns = (torch.arange(60) + 0.5) / 60
    photos = columns.expand(2, 3, 40, 60).clone()
    out = centre_crop_photos(photos, short_side=20, crop=20)  # resized to 20 x 30, columns 5-24 kept
    assert out.shape == (2, 3, 20, 20)
    torch.testing.assert_close(out[0, 0, 10], (torch.arange(5, 25) + 0.5) / 30, atol=0.01, rtol=0)


def test_diff_augment_shifts_and_cuts_out_each_image_on_its_own() -> None:
    from triton_s2r.data.augment import diff_augment

    torch.manual_seed(0)
    b, h, w = 8, 16, 24
    images = (torch.arange(b * h * w, dtype=torch.float32) + 1).view(b, 1, h, w).requires_grad_()
    moved = diff_augment(images, ["translation"], translation=0.25)
    shifts = set()
    for i in range(b):
        kept = moved[i, 0].nonzero()[0]  # any pixel that shows the image: its value gives the shift
        source = int(moved[i, 0, kept[0], kept[1]]) - 1 - i * h * w
        dy, dx = int(kept[0]) - source // w, int(kept[1]) - source % w
        assert abs(dy) <= h // 4 and abs(dx) <= w // 4
        expected = torch.zeros(h, w)
        expected[max(dy, 0):h + min(dy, 0), max(dx, 0):w + min(dx, 0)] = \
            images[i, 0, max(-dy, 0):h - max(dy, 0), max(-dx, 0):w - max(dx, 0)]
        torch.testing.assert_close(moved[i, 0], expected)
        shifts.add((dy, dx))
    assert len(shifts) > 1  # each image draws its own shift
    holes = diff_augment(images, ["cutout"], cutout=0.5) == 0
    assert holes.any() and (holes.flatten(1).sum(1) <= (h // 2) * (w // 2)).all()
    diff_augment(images, ["translation", "cutout"]).sum().backward()
    assert images.grad is not None and set(images.grad.unique().tolist()) <= {0.0, 1.0} and images.grad.any()
    assert diff_augment(images, []) is images
    with pytest.raises(ValueError, match="unknown discriminator augmentation"):
        diff_augment(images, ["flip"])


def test_discriminator_augmentation_trains_and_bad_names_are_refused(data_root, tmp_path) -> None:
    run_dir = run(tmp_path, "augment", data_root, "trainer.max_epochs=1", "data.steps_per_epoch=2",
                  "system.discriminator_augment=[translation,cutout]")
    assert (run_dir / "checkpoints" / "last.ckpt").is_file()
    fails(tmp_path, "bad", data_root, "system.discriminator_augment=[flip]")


def test_r1_penalty_trains_and_refuses_a_negative_gamma(data_root, tmp_path) -> None:
    run_dir = run(tmp_path, "r1", data_root, "trainer.max_epochs=1", "data.steps_per_epoch=2", "loss.r1_gamma=1.0")
    assert (run_dir / "checkpoints" / "last.ckpt").is_file()
    with pytest.raises(ValueError, match="loss.r1_gamma must be a finite number >= 0"):
        build_system(composed(["experiment=tiny", "loss.r1_gamma=-1"]))


def test_lazy_r1_penalty_comes_every_interval_weighted_by_it() -> None:
    """``loss.r1_interval=k``: R1 at batches 0, k, 2k, ... with γ·k; the batches between have no penalty."""
    from triton_s2r.losses import discriminator_adversarial_loss, r1_penalty

    system = build_system(composed(["experiment=tiny", "loss.r1_gamma=10", "loss.r1_interval=4"]))
    discriminator = system.discriminator_real
    torch.manual_seed(0)
    real, fake = torch.rand(2, 3, 48, 48), torch.rand(2, 3, 48, 48)
    leaf = real.clone().requires_grad_()
    logits = system._logits(discriminator, leaf)
    adversarial = discriminator_adversarial_loss(logits, system._logits(discriminator, fake), "lsgan")
    penalty = r1_penalty(logits, leaf)
    assert penalty > 0
    for batch, expected in ((0, adversarial + 10 * 4 / 2 * penalty), (3, adversarial), (8, adversarial + 20 * penalty)):
        system.batches_trained = batch
        assert system._discriminator_term(discriminator, real, fake).item() == pytest.approx(expected.item(), rel=1e-5)
    with pytest.raises(ValueError, match="loss.r1_interval must be an integer >= 1"):
        build_system(composed(["experiment=tiny", "loss.r1_interval=0"]))


@pytest.mark.parametrize("scope", ["networks", "scales"])
def test_r1_penalty_takes_the_eager_forward_of_a_compiled_discriminator(scope: str) -> None:
    """Compiled networks cannot be differentiated twice; R1's real-image pass bypasses the compiled calls.

    ``aot_eager`` stands in for Inductor (the same refusal of a double backward, without code generation); the
    discriminator is compiled whole or (compiled submodules are bypassed too) scale by scale.
    """
    from triton_s2r.losses import r1_penalty

    system = build_system(composed(["experiment=tiny", "loss.r1_gamma=10"]))
    discriminator = system.discriminator_real
    for piece in [discriminator] if scope == "networks" else discriminator.scales:
        piece.compile(backend="aot_eager", dynamic=False)
    real, fake = torch.rand(2, 3, 48, 48), torch.rand(2, 3, 48, 48)
    with pytest.raises(RuntimeError, match="double backward"):  # what the eager forward avoids
        leaf = real.clone().requires_grad_()
        r1_penalty(system._logits(discriminator, leaf), leaf).backward()
    discriminator.zero_grad()
    system._discriminator_term(discriminator, real, fake).backward()
    grads = [p.grad for p in discriminator.parameters()]
    assert all(g is not None and torch.isfinite(g).all() for g in grads) and any(g.abs().sum() > 0 for g in grads)


def test_the_photos_and_translations_in_one_discriminator_call_score_as_in_two() -> None:
    """``_logits_of_both`` (one call on the concatenation) equals separate calls: no layer mixes the batch."""
    system = build_system(composed(["experiment=tiny"]))
    torch.manual_seed(0)
    real, fake = torch.rand(2, 3, 48, 48), torch.rand(3, 3, 48, 48).bfloat16()
    both = system._logits_of_both(system.discriminator_real, real, fake)
    apart = system._logits(system.discriminator_real, real), system._logits(system.discriminator_real, fake)
    for joint, separate in zip(both, apart, strict=True):
        assert [logit.shape[0] for logit in joint] == [separate[0].shape[0]] * len(separate)
        for a, b in zip(joint, separate, strict=True):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_with_cuda_graphs_an_r1_batch_calls_the_compiled_discriminator_as_other_batches() -> None:
    """CUDA graphs replay a fixed sequence of compiled calls: R1 batches add their eager forward, skip nothing.

    A counting backend stands in for Inductor (it runs Dynamo's graph as is, so R1's double backward works) and
    records each compiled call's batch: the photos and the translations go in one call (batch 4), except where
    the R1 forward serves the photos (without CUDA graphs: the translations alone, batch 2). The loss is the same
    either way.
    """
    torch.compiler.reset()  # another test's compiled discriminator of these shapes would serve these calls
    calls: list[int] = []

    def counting(graph, example_inputs):
        def run(*args):
            calls.extend(a.shape[0] for a in args if isinstance(a, torch.Tensor) and a.shape[-2:] == (48, 48))
            return graph(*args)
        return run

    system = build_system(composed(["experiment=tiny", "loss.r1_gamma=10", "loss.r1_interval=2"]))
    discriminator = system.discriminator_real
    discriminator.compile(backend=counting, dynamic=False)
    torch.manual_seed(0)
    real, fake = torch.rand(2, 3, 48, 48), torch.rand(2, 3, 48, 48)
    losses, counts = {}, {}
    for cuda_graphs in (False, True):
        system._cuda_graphs = cuda_graphs
        for batch in (0, 1):  # R1, then none
            system.batches_trained = batch
            calls.clear()
            losses[cuda_graphs, batch] = system._discriminator_term(discriminator, real, fake).item()
            counts[cuda_graphs, batch] = list(calls)
    assert counts == {(False, 0): [2], (False, 1): [4], (True, 0): [4], (True, 1): [4]}
    assert losses[True, 0] == pytest.approx(losses[False, 0], rel=1e-6) and losses[True, 0] > losses[True, 1]
    system.losses = dataclasses.replace(system.losses, r1_interval=1)  # R1 at every batch: one sequence already
    calls.clear()
    system._discriminator_term(discriminator, real, fake)
    assert calls == [2]


def test_no_experiment_on_a_cpu_warns_about_the_reference_networks(data_root, tmp_path) -> None:
    out = tmp_path / "paper_on_cpu"  # system.lr=0 stops it right after the warning, before any model is built
    assert main(["train", "logger=none", f"data.root={data_root}", f"hydra.run.dir={out}", "system.lr=0"]) == 2
    log = (out / "train.log").read_text()
    assert "no experiment given and no GPU" in log and "experiment=demo" in log


def test_a_users_own_experiment_from_a_config_dir(data_root, tmp_path) -> None:
    """`--config-dir DIR` adds DIR to the search path: DIR/experiment/NAME.yaml is an experiment (docs/training.md)."""
    (tmp_path / "conf" / "experiment").mkdir(parents=True)
    (tmp_path / "conf" / "experiment" / "mine.yaml").write_text(
        "# @package _global_\nsystem:\n  lr: 3.0e-4\nloss:\n  detach_sim_targets: true\n")
    out = tmp_path / "mine"
    assert main(["train", "--config-dir", str(tmp_path / "conf"), "experiment=[tiny,mine]", "logger=none",
                 "trainer.enable_progress_bar=false", "trainer.max_epochs=1", "data.steps_per_epoch=1",
                 f"data.root={data_root}", f"hydra.run.dir={out}"]) == 0
    cfg = yaml.safe_load((out / "config.yaml").read_text())
    assert cfg["system"]["lr"] == 3e-4 and cfg["loss"]["detach_sim_targets"] is True
    assert cfg["system"]["crop_size"] == 48  # tiny's settings still apply


def test_shaded_experiment_trains_and_translates_any_frame_size(data_root, tmp_path) -> None:
    """experiment=shaded end to end: a tiny run, then whole frames of a size the generator cannot take."""
    from triton_s2r.inference.translator import Translator
    from triton_s2r.render.gbuffer import GBuffer

    out = tmp_path / "shaded"
    assert main(["train", "experiment=[tiny,shaded]", "logger=none", "trainer.enable_progress_bar=false",
                 "trainer.max_epochs=1", "data.steps_per_epoch=2", "model.translator.texture.tile_size=16384",
                 f"data.root={data_root}", f"hydra.run.dir={out}"]) == 0
    translator = Translator.from_run_dir(out, device="cpu")
    assert translator.model.shading_channels == 1
    textures = translator.bake_textures(8)
    assert textures.std() > 0  # the grey start moved
    label = torch.randint(0, translator.num_labels + 1, (2, 37, 42))
    result = translator(GBuffer(uv=torch.rand(2, 2, 37, 42), label=label))
    assert result.translation.shape == (2, 3, 37, 42) and torch.isfinite(result.translation).all()
    assert result.translation.min() >= 0 and result.translation.max() <= 1


def test_missing_checkpoint_is_a_clear_error(data_root, tmp_path, capsys) -> None:
    fails(tmp_path, "x", data_root, f"resume={tmp_path / 'nowhere'}")
    err = capsys.readouterr().err
    assert "checkpoint not found" in err and "nowhere" in err and "resume=<run dir>" in err


def test_non_finite_losses_are_skipped_then_stop(data_root, tmp_path, monkeypatch, capsys) -> None:
    import triton_s2r.training.system as system_module

    monkeypatch.setattr(system_module, "surface_chroma_consistency_loss", lambda *a, **k: torch.tensor(float("nan")))
    fails(tmp_path, "nan", data_root, "system.max_nonfinite_steps=3")
    err = capsys.readouterr().err
    assert "Traceback" not in err and "triton-s2r train: error:" in err
    assert NonFiniteLossError.__name__ in (tmp_path / "nan" / "train.log").read_text()
    # Checked at epoch ends and every NONFINITE_CHECK_EVERY batches: here at the end of epoch 1 (5 batches).
    assert "5 consecutive steps had non-finite losses (surface_chroma_consistency" in err
    assert "lower the learning rate" in err


def test_an_unexpected_failure_is_recorded_in_the_run(data_root, tmp_path, monkeypatch) -> None:
    import triton_s2r.training.system as system_module

    def out_of_memory(*args, **kwargs):
        raise RuntimeError("CUDA out of memory. Tried to allocate 1.04 GiB")

    monkeypatch.setattr(system_module, "surface_chroma_consistency_loss", out_of_memory)
    # Not a user error: Hydra prints the traceback and exits with status 1.
    assert main(["train", *TINY, f"data.root={data_root}", f"hydra.run.dir={tmp_path / 'oom'}"]) == 1
    log = (tmp_path / "oom" / "train.log").read_text()
    assert "training failed: RuntimeError: CUDA out of memory" in log  # benchmarks.results reads the reason here


def test_the_curves_plot_draws_the_gradient_peaks_in_a_panel_of_their_own(tmp_path) -> None:
    from PIL import Image

    from triton_s2r.training.curves import plot_curves

    rows = [{"batch": 50.0 * i, "wall_s": 30.0 * i, "val/psnr": 20.0 + i} for i in (1, 2, 3)]
    plot_curves(rows, tmp_path / "without.png")
    peaks = [{**row, "train/gradient_norm_d_peak": 10.0 * i, "train/gradient_norm_g_peak": 60.0}
             for i, row in enumerate(rows, 1)]
    plot_curves(peaks, tmp_path / "with.png")
    without, with_peaks = Image.open(tmp_path / "without.png").size, Image.open(tmp_path / "with.png").size
    assert with_peaks[0] > 1.5 * without[0] and with_peaks[1] == without[1]  # one panel more, side by side
