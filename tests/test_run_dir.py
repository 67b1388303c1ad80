"""The run directory: rerun to resume, bounded checkpoints, refusals that name keys, no code from a run.

One module run trains the tiny experiment for three one-batch epochs on the committed tiny dataset; the other
tests copy it (or the session's tiny run) and play a kill, a corrupt file or a hand-edited config on the copy.
"""

from __future__ import annotations

import importlib
import os
import shutil
from pathlib import Path

import pytest
import torch
import yaml

from triton_s2r.cli import main
from triton_s2r.inference.translator import Translator
from triton_s2r.runs.config import MOVED_TARGETS, RETIRED_KEYS, ConfigError, config_diff, load_config
from triton_s2r.runs.run_dir import CheckpointError, RunDir, load_checkpoint

TINY = ["experiment=tiny", "logger=none", "trainer.enable_progress_bar=false", "trainer.max_epochs=3",
        "data.steps_per_epoch=1", "checkpoints.keep=2"]


def train(data_root: Path, run: Path, *extra: str) -> int:
    return main(["train", *TINY, f"data.root={data_root}", f"hydra.run.dir={run}", *extra])


def state(path: Path) -> dict[str, torch.Tensor]:
    return load_checkpoint(path)["state_dict"]


@pytest.fixture(scope="module")
def finished(data_root, tmp_path_factory) -> Path:
    run = tmp_path_factory.mktemp("runs") / "finished"
    assert train(data_root, run) == 0
    return run


def copy_of(run: Path, to: Path) -> RunDir:
    shutil.copytree(run, to)
    return RunDir(to)


def test_finished_run_holds_bounded_checkpoints_labels_scene_and_log(finished, data_root, manifest) -> None:
    run = RunDir.open(finished)
    # keep=2: the newest two epochs, last and best; a file of the same name is replaced, never versioned.
    assert [p.name for p in run.checkpoints()] == ["best.ckpt", "epoch0001.ckpt", "epoch0002.ckpt", "last.ckpt"]
    assert int(state(run.last)["batches_done"]) == 3 and run.epochs_done() == 3
    assert run.labels().names == tuple(manifest["labels"]["names"])
    assert run.resolution() == tuple(manifest["resolution"])
    objects = len(yaml.safe_load((data_root / manifest["scene"]).read_text())["objects"])
    assert run.scene().num_objects == objects and run.scene_pose().shape == (objects, 4, 4)
    log = run.log_path.read_text()
    assert "`Trainer.fit` stopped: `max_epochs=3` reached" in log and "run directory:" in log
    # best.ckpt holds the epoch with the best val/psnr (one batch per epoch), even once its epoch file is gone.
    from triton_s2r.training.curves import read_curves

    psnr = [row["val/psnr"] for row in read_curves(finished / "curves.csv")]
    assert len(psnr) == 3 and len(set(psnr)) == 3, psnr
    assert int(state(run.checkpoint_dir / "best.ckpt")["batches_done"]) == psnr.index(max(psnr)) + 1


def test_curves_hold_each_labels_psnr_and_colour_error_at_each_validation(finished, manifest) -> None:
    """val/psnr/<label> and val/colour_error/<label>: a column each per label that the validation frames show."""
    from triton_s2r.training.curves import LABEL_PSNR, read_curves

    colour_error = "val/colour_error/"
    rows = read_curves(finished / "curves.csv")
    shown = {name.removeprefix(LABEL_PSNR) for row in rows for name in row if name.startswith(LABEL_PSNR)}
    assert "table" in shown and {"robot_base", "robot_arm"} <= shown, shown
    assert shown <= set(manifest["labels"]["names"])
    assert {name.removeprefix(colour_error) for row in rows for name in row if name.startswith(colour_error)} == shown
    for row in rows:
        assert all(5 < row[LABEL_PSNR + name] < 60 for name in shown if LABEL_PSNR + name in row), row
        errors = [row[colour_error + name] for name in shown if colour_error + name in row]
        assert errors and all(0 <= e <= 1 for e in errors) and max(errors) > 0, row


def test_curves_score_the_training_photos_beside_the_test_frames(finished) -> None:
    """val/train_real/...: the paired train_real frames scored as the test frames, a column beside each measure."""
    from triton_s2r.training.curves import TRAIN_REAL, read_curves

    rows = read_curves(finished / "curves.csv")
    for row in rows:
        for measure in ("psnr", "psnr_masked", "ssim", "haarpsi", "photo_score"):
            assert TRAIN_REAL + measure in row and "val/" + measure in row, (measure, row)
        assert 5 < row[TRAIN_REAL + "psnr"] < 60 and row[TRAIN_REAL + "psnr"] != row["val/psnr"], row
        assert any(name.startswith(TRAIN_REAL + "psnr/") for name in row), row


def test_last_links_to_the_newest_epoch_and_a_lost_link_falls_back_to_it(finished, data_root, tmp_path,
                                                                         capfd) -> None:
    """last.ckpt is a link (one write per epoch); killed between removing it and relinking, the rerun goes on."""
    link = finished / "checkpoints" / "last.ckpt"
    assert link.is_symlink() and link.resolve().name == "epoch0002.ckpt"
    run = tmp_path / "unlinked"
    shutil.copytree(finished, run, symlinks=True)
    for name in ("status.yaml", "checkpoints/epoch0002.ckpt", "checkpoints/last.ckpt"):
        (run / name).unlink()  # killed after saving epoch 1, before linking last.ckpt to it
    assert RunDir(run).last.name == "epoch0001.ckpt"
    assert train(data_root, run) == 0
    assert f"continuing {run} from {run / 'checkpoints' / 'epoch0001.ckpt'}" in capfd.readouterr().out
    assert (run / "checkpoints" / "last.ckpt").resolve().name == "epoch0002.ckpt" and RunDir(run).epochs_done() == 3
    expected, resumed = state(RunDir(finished).last), state(RunDir(run).last)
    for key in expected:
        torch.testing.assert_close(resumed[key], expected[key], rtol=1e-5, atol=1e-6, msg=lambda m, k=key: f"{k}: {m}")


def test_rerunning_a_finished_run_says_so_and_trains_nothing(finished, data_root, capfd) -> None:
    mtime = RunDir(finished).last.stat().st_mtime_ns
    assert train(data_root, finished) == 0
    assert "has finished its training already (its 3 epochs" in capfd.readouterr().out
    assert RunDir(finished).last.stat().st_mtime_ns == mtime


def test_a_run_ended_by_its_time_budget_is_finished_and_a_rerun_trains_nothing(data_root, tmp_path, capfd) -> None:
    run, budget = tmp_path / "timed", ["trainer.max_epochs=50", "+trainer.max_time=00:00:00:01"]
    assert train(data_root, run, *budget) == 0
    status = RunDir(run).status()
    assert status["stopped_by"] == "max_time" and 1 <= status["batches"] < 50 and status["epochs"] < 50
    assert int(state(RunDir(run).last)["batches_done"]) == status["batches"]  # the last batch is saved
    mtime = RunDir(run).last.stat().st_mtime_ns
    assert train(data_root, run, *budget) == 0
    assert "has finished its training already" in capfd.readouterr().out
    assert RunDir(run).last.stat().st_mtime_ns == mtime and RunDir(run).training_done(50)


def test_rerun_with_other_settings_is_refused_naming_the_keys(finished, data_root, capfd) -> None:
    config = (finished / "config.yaml").read_text()
    assert train(data_root, finished, "data.steps_per_epoch=6", "loss.surface_grid_size=16") == 2
    err = capfd.readouterr().err
    assert "data.steps_per_epoch: 1 -> 6" in err and "loss.surface_grid_size: 32 -> 16" in err
    assert "another hydra.run.dir" in err and f"resume={finished}" in err and "Traceback" not in err
    assert (finished / "config.yaml").read_text() == config


def test_a_run_saved_before_the_classes_moved_continues_and_translates(finished, data_root, tmp_path, capfd) -> None:
    """Runs saved before the sub-packages, with old class paths and a retired key, continue and translate.

    Such runs name ``triton_s2r.system.TritonSystem`` and the like, and hold
    ``system.surface_consistency_clip_frames`` (retired since: ℓUC takes data.sim_clip_frames).
    """
    run = copy_of(finished, tmp_path / "old")
    config = run.config_path.read_text()
    old = config.replace("triton_s2r.training.system.TritonSystem", "triton_s2r.system.TritonSystem").replace(
        "triton_s2r.data.datamodule.TritonDataModule", "triton_s2r.datamodule.TritonDataModule").replace(
        "\n  render_backend: ", "\n  surface_consistency_clip_frames: 2\n  render_backend: ")
    assert old.count("surface_consistency_clip_frames: 2") == 1
    assert old.count("_target_: triton_s2r.system.TritonSystem") == 1
    assert old.count("_target_: triton_s2r.datamodule.TritonDataModule") == 1
    run.config_path.write_text(old)
    assert run.config().system._target_ == "triton_s2r.training.system.TritonSystem"
    assert run.config().data._target_ == "triton_s2r.data.datamodule.TritonDataModule"
    assert train(data_root, run.path) == 0  # the same settings: nothing to train, no "other settings" refusal
    assert "has finished its training already (its 3 epochs" in capfd.readouterr().out
    assert Translator.from_run_dir(run.path, device="cpu").model is not None


def test_old_target_paths_are_read_as_todays(tmp_path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({
        "system": {"_target_": "triton_s2r.paired.PairedSystem", "lr": 1e-4},
        "data": {"_target_": "triton_s2r.datamodule.TritonDataModule", "root": "x"},
        "logger": {"_target_": "triton_s2r.train.wandb_logger"},
        "model": {"translator": {"_target_": "triton_s2r.models.triton.TritonModel",
                                 "stack": [{"_target_": "triton_s2r.system.TritonSystem"}]}},
    }))
    cfg = load_config(path)
    assert cfg.system._target_ == "triton_s2r.training.paired.PairedSystem" and cfg.system.lr == 1e-4
    assert cfg.data._target_ == "triton_s2r.data.datamodule.TritonDataModule"
    assert cfg.logger._target_ == "triton_s2r.train.wandb_logger"  # not moved: unchanged
    assert cfg.model.translator._target_ == "triton_s2r.models.triton.TritonModel"
    assert cfg.model.translator.stack[0]._target_ == "triton_s2r.training.system.TritonSystem"
    for old, new in MOVED_TARGETS.items():  # every new path names a class that exists
        module, name = new.rsplit(".", 1)
        assert getattr(importlib.import_module(module), name).__name__ == old.rsplit(".", 1)[1]


def test_a_retired_key_is_dropped_where_it_followed_its_key(tmp_path) -> None:
    """Saved with the key they always copied, old runs compare equal to today's.

    A value of its own stays, so continuing that run with today's settings is refused naming it.
    """
    path = tmp_path / "config.yaml"
    today = load_config_of(path, {"data": {"sim_clip_frames": 2}, "system": {"lr": 1e-4}})
    followed = load_config_of(path, {"data": {"sim_clip_frames": 2},
                                     "system": {"lr": 1e-4, "surface_consistency_clip_frames": 2}})
    assert "surface_consistency_clip_frames" not in followed.system and not config_diff(followed, today)
    own = load_config_of(path, {"data": {"sim_clip_frames": 2},
                                "system": {"lr": 1e-4, "surface_consistency_clip_frames": 1}})
    assert config_diff(own, today) == ["system.surface_consistency_clip_frames: 1 -> <absent>"]
    assert set(RETIRED_KEYS) == {"system.surface_consistency_clip_frames"}


def load_config_of(path: Path, data: dict):
    path.write_text(yaml.safe_dump(data))
    return load_config(path)


def test_rerun_continues_a_killed_run_exactly(finished, data_root, tmp_path, capfd) -> None:
    """Killed during epoch 2 while saving: last.ckpt is epoch 1's, a temporary file is left over."""
    run = copy_of(finished, tmp_path / "killed")
    (run.path / "status.yaml").unlink()
    (run.checkpoint_dir / "epoch0002.ckpt").unlink()
    shutil.copy(run.checkpoint_dir / "epoch0001.ckpt", run.last)
    leftovers = [run.checkpoint_dir / ".epoch0002.x1y2.ckpt", run.path / ".config.a1b2.yaml"]
    for path in leftovers:
        path.write_bytes(b"half")
    assert train(data_root, run.path) == 0
    out = capfd.readouterr().out
    assert f"continuing {run.path} from {run.last}" in out and "left by a job killed while saving" in out
    assert not any(path.exists() for path in leftovers)
    assert [p.name for p in run.checkpoints()] == ["best.ckpt", "epoch0001.ckpt", "epoch0002.ckpt", "last.ckpt"]
    assert run.epochs_done() == 3
    expected, resumed = state(RunDir(finished).last), state(run.last)
    for key in expected:
        torch.testing.assert_close(resumed[key], expected[key], rtol=1e-5, atol=1e-6, msg=lambda m, k=key: f"{k}: {m}")


def test_corrupt_checkpoint_on_resume_is_named_and_nothing_is_lost(finished, data_root, tmp_path, capfd) -> None:
    run = copy_of(finished, tmp_path / "corrupt")
    (run.path / "status.yaml").unlink()
    run.last.write_bytes(run.last.read_bytes()[:50_000])  # a copy that did not finish
    before = {p.name: p.read_bytes() for p in run.checkpoints()}
    assert train(data_root, run.path) == 2
    err = capfd.readouterr().err
    assert f"{run.last}: not a readable checkpoint" in err and "Traceback" not in err
    assert {p.name: p.read_bytes() for p in run.checkpoints()} == before


@pytest.mark.parametrize("override, key", [
    ("data.steps_per_epoch=0", "data.steps_per_epoch=0"),
    ("data.batch_size=-4", "data.batch_size=-4"),
    ("trainer.max_epochs=0", "trainer.max_epochs=0"),
    ("checkpoints.keep=0", "checkpoints.keep=0"),
    ("system.lr=0", "system.lr=0"),
    ("data.num_workers=-1", "data.num_workers=-1"),
    ("system.crop_size=2.5", "system.crop_size=2.5"),
    ("data.val_frames=many", "data.val_frames='many'"),
    ("system.gradient_clip_ratio=1", "system.gradient_clip_ratio=1"),  # a limit at the mean would clip every batch
])
def test_config_values_that_cannot_work_are_refused_before_anything_is_written(
        data_root, tmp_path, capfd, override, key) -> None:
    assert train(data_root, tmp_path / "run", override) == 2
    err = capfd.readouterr().err
    assert f"{key} cannot work" in err and "Traceback" not in err
    assert not (tmp_path / "run" / "config.yaml").exists()


def test_folders_beside_a_benchmark_root_is_an_error(data_root, tmp_path, capfd) -> None:
    # experiment=tiny sets data.root; data=folders adds the user's folders: which one was meant is unclear.
    assert main(["train", "data=folders", "experiment=tiny", "logger=none", f"hydra.run.dir={tmp_path / 'run'}",
                 f"data.sim_dir={data_root / 'train_sim' / 'uvl'}", "data.labels.names=[a]", "data.labels.values=[9]",
                 f"data.real_dir={data_root / 'train_real' / 'real'}"]) == 2
    assert "add data.root=null" in capfd.readouterr().err


def test_a_moved_run_translates_and_exports_without_its_dataset(run_dir, data_root, manifest, tmp_path) -> None:
    moved = tmp_path / "moved"
    shutil.copytree(run_dir, moved, ignore=shutil.ignore_patterns("epoch*", "previews", "csv"))
    config = yaml.safe_load((moved / "config.yaml").read_text())
    config["data"]["root"] = str(tmp_path / "gone")  # nothing may look for the training data
    (moved / "config.yaml").write_text(yaml.safe_dump(config))
    states = tmp_path / "elsewhere" / "states.npz"  # no dataset.yaml above it: the run's scene and frame size
    states.parent.mkdir()
    shutil.copy(data_root / "test" / "states.npz", states)
    shutil.copytree(data_root / "test" / "uvl", tmp_path / "uvl")  # plain UVL files: the run's label table
    for source in (states, tmp_path / "uvl"):
        out = tmp_path / f"{source.stem}_frames"
        assert main(["translate", str(moved), str(source), "--out", str(out), "--device", "cpu"]) == 0
        assert len(list(out.glob("*.png"))) == manifest["splits"]["test"]["frames"]
    assert main(["export-textures", str(moved), "--out", str(tmp_path / "tex"), "--resolution", "16",
                 "--device", "cpu"]) == 0
    assert (tmp_path / "tex" / "obj" / "ball.obj").is_file() and (tmp_path / "tex" / "scene.glb").is_file()


@pytest.mark.parametrize("section", [
    {"_target_": "os.makedirs", "name": "{marker}"},
    {"_target_": "triton_s2r.models.triton.TritonModel",
     "sim_input": {"_target_": "os.makedirs", "name": "{marker}"}},
    {"_target_": "triton_s2r.models.triton.TritonModel", "_partial_": True},
    {"_target_": "${oc.env:EVIL_TARGET}", "name": "{marker}"},
])
def test_a_run_config_cannot_run_code(run_dir, tmp_path, capsys, monkeypatch, section) -> None:
    marker = tmp_path / "pwned"
    monkeypatch.setenv("EVIL_TARGET", "os.makedirs")  # an interpolation cannot smuggle a target in either
    section = yaml.safe_load(yaml.safe_dump(section).replace("'{marker}'", str(marker)).replace("{marker}",
                                                                                                 str(marker)))
    crafted = tmp_path / "crafted"
    shutil.copytree(run_dir, crafted, ignore=shutil.ignore_patterns("epoch*", "previews", "csv"))
    config = yaml.safe_load((crafted / "config.yaml").read_text())
    config["model"]["translator"] = section
    (crafted / "config.yaml").write_text(yaml.safe_dump(config))
    with pytest.raises(ConfigError, match="is not allowed in a model section"):
        Translator.from_run_dir(crafted, device="cpu")
    assert main(["export-textures", str(crafted), "--out", str(tmp_path / "x"), "--device", "cpu"]) == 2
    assert "config.yaml: model.translator" in capsys.readouterr().err
    assert not marker.exists()


class _Payload:
    """Unpickling this runs ``os.makedirs(path)``: what a crafted checkpoint could do."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self):
        return os.makedirs, (str(self.path),)


def test_checkpoints_are_loaded_without_running_code(run_dir, tmp_path) -> None:
    marker = tmp_path / "pwned"
    crafted = copy_of(run_dir, tmp_path / "crafted")
    checkpoint = load_checkpoint(crafted.last)
    checkpoint["payload"] = _Payload(marker)
    torch.save(checkpoint, crafted.last)
    with pytest.raises(CheckpointError, match="last.ckpt: not a readable checkpoint"):
        Translator.from_run_dir(crafted.path, device="cpu")
    assert not marker.exists()
