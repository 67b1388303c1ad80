"""The robot_pairing term: the real frames' robot rendered from their states, at the photos' crops (embree, CPU)."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import cv2
import numpy as np
import pytest
import torch
import yaml
from tiny_assets import metric_rows

from triton_s2r.cli import main
from triton_s2r.data.datamodule import TritonDataModule
from triton_s2r.data.datasets import BenchmarkDataset, UVLFrames
from triton_s2r.render.rasterizer import make_rasterizer
from triton_s2r.render.scene import load_scene
from triton_s2r.training.robot_pairing import RobotViews

ROBOT = ("robot_base", "robot_arm", "robot_hand")
TINY = ["experiment=tiny", "trainer.enable_progress_bar=false"]


def views_of(dataset: BenchmarkDataset, labels=ROBOT) -> RobotViews:
    scene = load_scene(dataset.scene_file)
    return RobotViews.from_states(scene, dataset.states("train_real"), labels, make_rasterizer("embree"))


def first_batch(data_root: Path, *overrides: str):
    """The ``tiny`` system with ``overrides``, its data attached, and the step inputs of its first training batch."""
    from hydra import compose, initialize_config_module

    from triton_s2r.train import build

    with initialize_config_module("triton_s2r.conf", version_base="1.3"):
        cfg = compose("train", overrides=[*TINY, f"data.root={data_root}", *overrides])
    datamodule, system = build(cfg)
    system.attach_data(datamodule, torch.device("cpu"))
    batch = datamodule.transfer_batch_to_device(next(iter(datamodule.train_dataloader())), torch.device("cpu"), 0)
    return system, system._inputs(batch)


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


def test_tracked_objects_are_rendered_where_the_paired_frames_show_them_and_compared(data_root) -> None:
    dataset = BenchmarkDataset.open(data_root)
    scene = load_scene(dataset.scene_file)
    views = RobotViews.from_states(scene, dataset.states("train_real"), ROBOT, make_rasterizer("embree"), tracked=True)
    names = dataset.labels.names
    objects = torch.tensor([i + 1 for i, n in enumerate(names) if n not in (*ROBOT, "table")])
    assert set(views.label_ids.tolist()) == {names.index(n) + 1 for n in ROBOT} | set(objects.tolist())
    assert views.object_ids.numel() == 0  # every place is known: nothing left to G_B
    height, width = dataset.resolution
    crop = min(height, width)
    rendered = views.render([0, 1], (height, width), torch.tensor([[0, 0], [0, 0]]), crop)
    paired = dataset.uvl_frames("train_real")
    shown = 0
    for b in range(2):
        reference = paired[b].label[0][:crop, :crop]
        on_objects = torch.isin(reference, objects)
        shown += int(on_objects.sum())
        assert torch.equal(rendered.label[b][on_objects], reference[on_objects])
    assert shown > 20


def test_tracked_objects_need_states_that_pose_them(xarm_folders) -> None:
    scene, states = folders_data(xarm_folders).real_robot_states()  # the joints-only log: no object posed
    with pytest.raises(ValueError, match=r"system.tracked_objects=true, but the real frames' states pose no object "
                                         r"that moves.*or set system.tracked_objects=false"):
        RobotViews.from_states(scene, states, XARM_ROBOT, make_rasterizer("embree"), tracked=True)


def test_tracked_objects_train_shaded_with_their_textures_paired(data_root, tmp_path) -> None:
    """With system.tracked_objects the moving objects are shaded (not G_B's) and robot pairing compares them."""
    from triton_s2r.inference.translator import Translator

    system, inputs = first_batch(data_root, "system.tracked_objects=true")
    out = system._forward(inputs)
    assert out.robot_label is not None
    names = BenchmarkDataset.open(data_root).labels.names
    moving = [i + 1 for i, name in enumerate(names) if name not in (*ROBOT, "table")]
    assert torch.isin(out.robot_label, torch.tensor(moving)).any()  # the photos' objects are rendered
    run = tmp_path / "run"
    assert main(["train", *TINY, "logger=none", f"data.root={data_root}", f"hydra.run.dir={run}",
                 "trainer.max_epochs=1", "data.steps_per_epoch=1", "system.tracked_objects=true"]) == 0
    shaded = Translator.from_run_dir(run, device="cpu").model.shaded_labels
    assert shaded[1:].all() and not shaded[0]


def test_robot_labels_must_name_the_robot(data_root) -> None:
    with pytest.raises(ValueError, match=r"system.robot_pairing_labels \['gripper'\]: \['gripper'\] not among"):
        views_of(BenchmarkDataset.open(data_root), ("gripper",))


def test_training_with_robot_pairing_logs_the_term(data_root, tmp_path) -> None:
    out = tmp_path / "run"
    assert main(["train", *TINY, "logger=csv", f"data.root={data_root}", f"hydra.run.dir={out}", "trainer.max_epochs=1",
                 "data.steps_per_epoch=2", "trainer.log_every_n_steps=1", "loss.loss_weights.robot_pairing=10"]) == 0
    rows = metric_rows(out)
    values = [float(row["train/robot_pairing"]) for row in rows if row.get("train/robot_pairing")]
    assert len(values) == 2 and all(math.isfinite(v) and v > 0 for v in values)


def plain_folders(data_root: Path) -> list[str]:
    """The tiny training on the benchmark's frames as plain folders: labels, no real states."""
    labels = BenchmarkDataset.open(data_root).labels
    return ["data=folders", *TINY, "data.root=null", f"data.sim_dir={data_root / 'train_sim' / 'uvl'}",
            f"data.real_dir={data_root / 'train_real' / 'real'}", f"data.labels.names=[{','.join(labels.names)}]",
            f"data.labels.values=[{','.join(str(v) for v in labels.values)}]"]


@pytest.mark.parametrize(("term", "overrides", "listed"), [
    ("robot_pairing", ["loss.loss_weights.robot_pairing=10"], r"\['robot_pairing', 'texture_pairing'\]"),
    ("object_adversarial", ["loss.loss_weights.object_adversarial=1", "system.object_crop_fraction=0.5",
                            "system.object_crop_size=32"],
     r"\['robot_pairing', 'texture_pairing', 'object_adversarial'\]"),
    ("robot_pairing", ["system.shared_object_hint=true"],
     r"\['robot_pairing', 'texture_pairing'\] and system.shared_object_hint"),
])
def test_plain_folders_without_real_states_train_without_the_term_and_say_so(data_root, tmp_path, term: str,
                                                                             overrides: list[str], listed: str) -> None:
    """Every term that needs the photos' states is turned off, with one warning naming them all."""
    out = tmp_path / "run"
    with pytest.warns(UserWarning, match=rf"loss.loss_weights {listed} off for this run"):
        assert main(["train", *plain_folders(data_root), "logger=csv", f"hydra.run.dir={out}",
                     "trainer.max_epochs=1", "data.steps_per_epoch=2", "trainer.log_every_n_steps=1", *overrides]) == 0
    rows = metric_rows(out)
    assert rows and not any(row.get(f"train/{term}") for row in rows)
    assert any(row.get("train/adversarial") for row in rows)


def test_a_shared_object_hint_gives_the_moving_objects_one_value_and_keeps_it_for_inference(data_root,
                                                                                           tmp_path) -> None:
    from triton_s2r.inference.translator import Translator

    out = tmp_path / "run"
    assert main(["train", *TINY, "logger=csv", f"data.root={data_root}", f"hydra.run.dir={out}", "trainer.max_epochs=1",
                 "data.steps_per_epoch=2", "system.shared_object_hint=true"]) == 0
    names = BenchmarkDataset.open(data_root).labels.names
    values = Translator.from_run_dir(out, device="cpu").model.sim_input.hint_label_values
    moving = [i + 1 for i, name in enumerate(names) if name not in (*ROBOT, "table")]
    kept = [i for i in range(len(names) + 1) if i not in moving]
    assert len(moving) >= 2 and torch.equal(values[moving], values[moving[:1]].expand(len(moving)))
    by_id = 2.0 * (torch.arange(len(names) + 1) / len(names)) - 1.0
    torch.testing.assert_close(values[moving[0]], by_id[moving].mean())
    assert torch.equal(values[kept], by_id[kept])  # void, table and robot keep their own


def test_unshaded_objects_keep_the_decoders_image_and_train(data_root, tmp_path) -> None:
    """The defaults (system.shade_objects=false): the moving objects are G_B's, the robot and table shaded; saved."""
    from triton_s2r.inference.translator import Translator

    out = tmp_path / "run"
    assert main(["train", *TINY, "logger=csv", f"data.root={data_root}", f"hydra.run.dir={out}", "trainer.max_epochs=1",
                 "data.steps_per_epoch=2", "trainer.log_every_n_steps=1"]) == 0
    names = BenchmarkDataset.open(data_root).labels.names
    model = Translator.from_run_dir(out, device="cpu").model
    assert model.shading_channels == 1
    moving = [i + 1 for i, name in enumerate(names) if name not in (*ROBOT, "table")]
    assert len(moving) >= 2 and not model.shaded_labels[moving].any() and not model.shaded_labels[0]
    assert model.shaded_labels[[i for i in range(1, len(names) + 1) if i not in moving]].all()
    losses = [float(row["train/texture_reality"]) for row in metric_rows(out) if row.get("train/texture_reality")]
    assert losses and all(math.isfinite(v) for v in losses)


def test_without_real_states_every_surface_is_shaded_and_says_so(data_root, tmp_path) -> None:
    from triton_s2r.inference.translator import Translator

    out = tmp_path / "run"
    with pytest.warns(UserWarning, match="system.shade_objects=false: every surface is shaded for this run"):
        assert main(["train", *plain_folders(data_root), "logger=none", f"hydra.run.dir={out}",
                     "trainer.max_epochs=1", "data.steps_per_epoch=1"]) == 0
    shaded = Translator.from_run_dir(out, device="cpu").model.shaded_labels
    assert shaded[1:].all() and not shaded[0]


# ---------------------------------------------------------------------------- plain folders with real states

XARM = Path(__file__).parents[1] / "examples" / "xarm"
XARM_ROBOT = ("robot_base", "robot_arm", "robot_wrist")


@pytest.fixture(scope="module")
def xarm_folders(tmp_path_factory) -> Path:
    """render-sim's UVL frames of the xArm example, 12 'photos' of its size, and a joints-only real states CSV."""
    pytest.importorskip("yourdfpy")
    pytest.importorskip("pybullet_data")
    root = tmp_path_factory.mktemp("xarm")
    assert main(["render-sim", str(XARM / "scene.yaml"), str(XARM / "trajectory.csv"), "--out", str(root / "sim"),
                 "--resolution", "64x80", "--backend", "embree"]) == 0
    (root / "photos").mkdir()
    rng = np.random.default_rng(0)
    for i in range(12):
        cv2.imwrite(str(root / "photos" / f"photo_{i:02d}.png"), rng.integers(0, 256, (64, 80, 3), dtype=np.uint8))
    rows = list(csv.reader((XARM / "trajectory.csv").open()))
    joints = [c for c, name in enumerate(rows[0]) if name == "frame" or name.startswith("joint")]
    with (root / "real_states.csv").open("w", newline="") as f:  # what a real robot logs: its joints only
        csv.writer(f).writerows([[row[c] for c in joints] for row in rows])
    return root


def folders_data(root: Path, states: str = "real_states.csv", **kwargs) -> TritonDataModule:
    labels = yaml.safe_load((root / "sim" / "labels.yaml").read_text())
    return TritonDataModule(sim_dir=str(root / "sim" / "uvl"), real_dir=str(root / "photos"), labels=labels,
                            scene=str(XARM / "scene.yaml"), real_states=str(root / states), **kwargs)


def test_plain_folders_render_the_robot_of_each_photo_from_its_logged_joints(xarm_folders) -> None:
    data = folders_data(xarm_folders)
    assert data.has_real_states
    scene, states = data.real_robot_states()
    assert {o.name for o in scene.objects} == {o.name for o in load_scene(XARM / "scene.yaml").objects} - {
        "table", "cube", "can"}  # objects the log does not pose are left out
    views = RobotViews.from_states(scene, states, XARM_ROBOT, make_rasterizer("embree"))
    # and drawn by G_B with the shaded output, as objects that move: their place in the photos is unknown
    assert set(views.object_ids.tolist()) == {data.labels.id_of(n) for n in ("table", "cube", "can")}
    frames, offsets = [0, 6, 11], torch.tensor([[0, 0], [0, 16], [0, 9]])
    rendered = views.render(frames, (64, 80), offsets, 64)
    sim = UVLFrames(xarm_folders / "sim" / "uvl", data.labels)  # the same trajectory, every object posed
    compared = 0
    for b, (frame, (top, left)) in enumerate(zip(frames, offsets.tolist(), strict=True)):
        reference = sim[frame].label[0][top:top + 64, left:left + 64]
        robot = torch.isin(reference, views.label_ids)
        compared += int(robot.sum())
        assert torch.equal(rendered.label[b][robot], reference[robot])
        assert torch.isin(rendered.label[b], torch.cat([views.label_ids, torch.tensor([0])])).all()
    assert compared > 100


def test_plain_folders_train_with_robot_pairing(xarm_folders, tmp_path) -> None:
    labels = yaml.safe_load((xarm_folders / "sim" / "labels.yaml").read_text())
    out = tmp_path / "run"
    assert main(["train", "data=folders", *TINY, "logger=csv", "data.root=null", f"hydra.run.dir={out}",
                 f"data.sim_dir={xarm_folders / 'sim' / 'uvl'}", f"data.real_dir={xarm_folders / 'photos'}",
                 f"data.labels.names=[{','.join(labels['names'])}]",
                 f"data.labels.values=[{','.join(str(v) for v in labels['values'])}]",
                 f"data.labels.void_value={labels['void_value']}", f"data.scene={XARM / 'scene.yaml'}",
                 f"data.real_states={xarm_folders / 'real_states.csv'}", "trainer.max_epochs=1",
                 "data.steps_per_epoch=2",
                 f"system.robot_pairing_labels=[{','.join(XARM_ROBOT)}]", "loss.loss_weights.robot_pairing=10"]) == 0
    rows = metric_rows(out)
    values = [float(row["train/robot_pairing"]) for row in rows if row.get("train/robot_pairing")]
    assert len(values) == 2 and all(math.isfinite(v) and v > 0 for v in values)


def test_plain_folders_real_states_errors_name_the_file_and_the_fix(xarm_folders) -> None:
    lines = (xarm_folders / "real_states.csv").read_text().splitlines()
    (xarm_folders / "short.csv").write_text("\n".join(lines[:-1]) + "\n")
    with pytest.raises(ValueError, match=r"short.csv: 11 frames for the 12 photos of .*one state per photo"):
        folders_data(xarm_folders, "short.csv").real_robot_states()
    data = folders_data(xarm_folders)
    data.label_spec = {**data.label_spec, "names": ["table", "cube", "can", "base", "arm", "wrist"]}
    with pytest.raises(ValueError, match=r"scene.yaml: labels .* differ from data.labels.names"):
        data.real_robot_states()
    with pytest.raises(ValueError, match="need both"):
        TritonDataModule(sim_dir="s", real_dir="r", labels={}, real_states="states.csv")


def test_one_network_call_for_robot_renders_and_sim_batch_gives_the_terms_of_separate_calls(data_root) -> None:
    """Shared network calls give every term of its definition with a call per image batch.

    The step sends the robot renders through E_A and G_B with the sim batch, the photos and x_ab through E_B, and
    each decoder's reconstruction and cycle codes through one call. Eval mode: the encoders' input noise off, so
    both ways see the same inputs.
    """
    from hydra import compose, initialize_config_module

    from triton_s2r.losses import reconstruction_loss
    from triton_s2r.train import build

    with initialize_config_module("triton_s2r.conf", version_base="1.3"):
        cfg = compose("train", overrides=[*TINY, f"data.root={data_root}", "loss.loss_weights.robot_pairing=10",
                                          "loss.surface_losses_from=0", "system.robot_pairing_void=false"])
    datamodule, system = build(cfg)
    system.attach_data(datamodule, torch.device("cpu"))
    system.eval()
    loader = datamodule.train_dataloader()
    batch = datamodule.transfer_batch_to_device(next(iter(loader)), torch.device("cpu"), 0)
    torch.manual_seed(0)
    with torch.no_grad():
        inputs = system._inputs(batch)
        out = system._forward(inputs)
        terms = system._generator_terms(out)
        m, view, n = system.model, inputs.robot, out.real.shape[0]
        assert view is not None and out.robot_x_ab is not None and out.c_a is not None and out.c_b is not None
        assert out.x_ab.shape[0] == out.robot_x_ab.shape[0] == out.x_a.shape[0] == n
        torch.testing.assert_close(out.x_ab, m.translate(out.x_a, m.sample_texture(out.uv, out.label)),
                                   rtol=1e-4, atol=1e-4)
        robot_x_ab = m(view.uv, view.label)
        torch.testing.assert_close(out.robot_x_ab, robot_x_ab, rtol=1e-4, atol=1e-4)
        robot = torch.isin(view.label, system._robot_views.label_ids)  # pyright: ignore[reportOptionalMemberAccess]
        assert robot.any()
        assert terms["robot_pairing"].item() == pytest.approx(
            reconstruction_loss(robot_x_ab, out.real, "l1", mask=robot).item(), rel=1e-4)

        def omega(x, y, data_range, criterion=system.losses.criterion):
            return reconstruction_loss(x.float(), y.float(), criterion, data_range)

        sim_range = 2.0 * max(1.0, m.sim_input.hint_multiplier + m.sim_input.texture_multiplier)
        e_a, g_a, e_b, g_b = (m.generator_sim.encode, m.generator_sim.decode, m.generator_real.encode,
                              m.generator_real.decode)
        torch.testing.assert_close(out.c_b, e_b(out.real), rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(out.c_ab, e_b(out.x_ab_fixed_texture), rtol=1e-4, atol=1e-4)
        reconstruction = omega(g_a(out.c_a), out.x_a, sim_range) + omega(g_b(e_b(out.real)), out.real, 2.0)
        cycle = (omega(g_a(e_b(out.x_ab_fixed_texture)), out.x_a, sim_range)
                 + omega(g_b(e_a(out.x_ba)), out.real, 2.0))
        content = (omega(e_b(out.x_ab_fixed_texture), out.c_a, 1.0, system.losses.content_criterion)
                   + omega(e_a(out.x_ba), e_b(out.real), 1.0, system.losses.content_criterion))
    assert terms["reconstruction"].item() == pytest.approx(reconstruction.item(), rel=1e-4)
    assert terms["cycle"].item() == pytest.approx(cycle.item(), rel=1e-4)
    assert terms["content"].item() == pytest.approx(content.item(), rel=1e-4)


def test_texture_pairing_fits_the_textures_of_the_rendered_surfaces_to_the_photos(data_root) -> None:
    """texture_pairing: L1 between the photos and π of their robot-and-table render; only the texture learns from it."""
    from triton_s2r.losses import reconstruction_loss

    system, inputs = first_batch(data_root, "loss.loss_weights.robot_pairing=0", "loss.loss_weights.texture_pairing=10")
    out = system._forward(inputs)
    term = system._generator_terms(out)["texture_pairing"]
    view, m = inputs.robot, system.model
    assert view is not None and system._robot_views is not None
    table = system._robot_views.scene.labels.id_of("table")
    assert (view.label == table).any()  # the static table is rendered with the robot
    projection = 2 * m.texture(view.uv, view.label) - 1
    expected = reconstruction_loss(projection, out.real, "l1", mask=view.label > 0)
    assert term.item() == pytest.approx(expected.item(), rel=1e-4)
    term.backward()
    texture = {id(p) for p in m.texture.parameters()}
    learned = [p for p in system.parameters() if p.grad is not None and p.grad.abs().sum() > 0]
    assert learned and all(id(p) in texture for p in learned)


def test_robot_pairing_void_adds_a_mean_over_the_backdrop(data_root) -> None:
    """``system.robot_pairing_void`` (the default): the robot's mean (checked above) plus a mean over the backdrop.

    The backdrop: the pixels the render of the robot and the static objects leaves void.
    """
    from triton_s2r.losses import reconstruction_loss
    from triton_s2r.render import VOID

    system, inputs = first_batch(data_root)
    out = system._forward(inputs)
    assert system._robot_views is not None and out.robot_label is not None and out.robot_x_ab is not None
    robot = torch.isin(out.robot_label, system._robot_views.label_ids)
    backdrop = out.robot_label == VOID
    assert robot.any() and backdrop.any()
    x_ab, real = out.robot_x_ab.float(), out.real.float()
    expected = (reconstruction_loss(x_ab, real, "l1", mask=robot)
                + reconstruction_loss(x_ab, real, "l1", mask=backdrop))
    assert system._robot_pairing(out).item() == pytest.approx(expected.item(), rel=1e-5)
