"""The robot_pairing term: the real frames' robot rendered from their states, at the photos' crops (embree, CPU)."""

from __future__ import annotations

import csv
import math

import pytest
import torch

from triton_s2r.cli import main
from triton_s2r.data.datasets import BenchmarkDataset
from triton_s2r.render.rasterizer import make_rasterizer
from triton_s2r.render.scene import load_scene
from triton_s2r.training.robot_pairing import RobotViews

ROBOT = ("robot_base", "robot_arm", "robot_hand")
TINY = ["experiment=tiny", "trainer.enable_progress_bar=false"]


def views_of(dataset: BenchmarkDataset, labels=ROBOT) -> RobotViews:
    scene = load_scene(dataset.scene_file)
    return RobotViews.from_states(scene, dataset.states("train_real"), labels, make_rasterizer("embree"))


def test_the_robot_is_rendered_where_the_paired_frames_show_it_and_the_objects_are_left_out(data_root) -> None:
    dataset = BenchmarkDataset.open(data_root)
    views = views_of(dataset)
    height, width = dataset.resolution
    crop = min(height, width) - 4
    offsets = torch.tensor([[0, 0], [height - crop, width - crop], [2, 1]])
    frames = [0, 1, 2]
    rendered = views.render(frames, (height, width), offsets, crop)
    paired = dataset.uvl_frames("train_real")  # the benchmark's own UVL frames of the real states, objects included
    names = dataset.labels.names
    objects = torch.tensor([i + 1 for i, n in enumerate(names) if n not in (*ROBOT, "table")])
    compared = 0
    for b, (frame, (top, left)) in enumerate(zip(frames, offsets.tolist(), strict=True)):
        reference = paired[frame].label[0][top:top + crop, left:left + crop]
        robot = torch.isin(reference, views.label_ids)
        compared += int(robot.sum())
        assert torch.equal(rendered.label[b][robot], reference[robot])
        paired_uv = paired[frame].uv[0][:, top:top + crop, left:left + crop]
        assert torch.allclose(rendered.uv[b][:, robot], paired_uv[:, robot], atol=1e-3)  # files keep 16-bit UVs
        assert not torch.isin(rendered.label[b], objects).any()  # the objects' poses are not used
    assert compared > 50
    assert (rendered.label == dataset.labels.id_of("table")).any()  # static objects stay


def test_robot_labels_must_name_the_robot(data_root) -> None:
    with pytest.raises(ValueError, match=r"system.robot_pairing_labels \['gripper'\]: \['gripper'\] not among"):
        views_of(BenchmarkDataset.open(data_root), ("gripper",))


def test_training_with_robot_pairing_logs_the_term(data_root, tmp_path) -> None:
    out = tmp_path / "run"
    assert main(["train", *TINY, "logger=csv", f"data.root={data_root}", f"hydra.run.dir={out}", "trainer.max_epochs=1",
                 "data.steps_per_epoch=2", "trainer.log_every_n_steps=1", "loss.loss_weights.robot_pairing=10"]) == 0
    rows = list(csv.DictReader((out / "csv" / "version_0" / "metrics.csv").open()))
    values = [float(row["train/robot_pairing"]) for row in rows if row.get("train/robot_pairing")]
    assert len(values) == 2 and all(math.isfinite(v) and v > 0 for v in values)


def test_robot_pairing_without_real_states_is_a_clear_error(data_root, tmp_path, capfd) -> None:
    labels = BenchmarkDataset.open(data_root).labels
    assert main(["train", "data=folders", *TINY, "logger=none", "data.root=null", f"hydra.run.dir={tmp_path / 'run'}",
                 f"data.sim_dir={data_root / 'train_sim' / 'uvl'}",
                 f"data.real_dir={data_root / 'train_real' / 'real'}",
                 f"data.labels.names=[{','.join(labels.names)}]",
                 f"data.labels.values=[{','.join(str(v) for v in labels.values)}]",
                 "loss.loss_weights.robot_pairing=10"]) == 2
    assert "robot_pairing needs the real frames' robot states" in capfd.readouterr().err
