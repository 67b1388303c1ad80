"""Bring your own robot: scene files with a URDF robot, states files from any simulator, ``render-sim``."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml

from triton_s2r.cli import main
from triton_s2r.render import LabelTable, load_scene, read_uvl, uvl_to_gbuffer
from triton_s2r.render.sim_states import read_states, to_frame_state, write_states

pytest.importorskip("yourdfpy")
pytest.importorskip("xatlas")

EXAMPLE = Path(__file__).parents[1] / "examples" / "xarm"

# Two box links and a revolute joint: no mesh files, so the tests need no robot package.
URDF = """<robot name="tiny">
  <link name="base"><visual><geometry><box size="0.2 0.2 0.1"/></geometry></visual></link>
  <link name="arm"><visual><origin xyz="0 0 0.2"/><geometry><box size="0.05 0.05 0.4"/></geometry></visual></link>
  <link name="tool"/>
  <joint name="shoulder" type="revolute"><parent link="base"/><child link="arm"/><origin xyz="0 0 0.05"/>
    <axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
  <joint name="flange" type="fixed"><parent link="arm"/><child link="tool"/><origin xyz="0 0 0.4"/></joint>
</robot>
"""


def _scene(tmp_path: Path, robot: dict, urdf: str = URDF) -> Path:
    (tmp_path / "tiny.urdf").write_text(urdf)
    spec = {"labels": [{"name": "floor", "value": 200}], "robot": robot,
            "camera": {"eye": [1.0, -1.0, 0.8], "target": [0, 0, 0.2], "fov_y_deg": 50}}
    shutil.copy(EXAMPLE / "meshes" / "table.obj", tmp_path / "floor.obj")
    spec["objects"] = [{"name": "floor", "label": "floor", "mesh": "floor.obj"}]
    path = tmp_path / "scene.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def test_robot_scene_labels_tiles_and_kinematics(tmp_path):
    scene = load_scene(_scene(tmp_path, {"urdf": "tiny.urdf", "base": {"xyz": [0.1, 0, 0]}}))
    assert [o.name for o in scene.objects] == ["floor", "base", "arm"]
    assert scene.labels.names == ("floor", "base", "arm")  # one label per link by default, with free values
    assert len(set(scene.labels.values)) == 3 and 200 in scene.labels.values
    grouped = load_scene(_scene(tmp_path, {"urdf": "tiny.urdf", "labels": {"robot": ["base", "arm"]}}))
    arm, base = (grouped.objects[i].mesh.v_uv for i in (2, 1))
    assert arm.min() >= 0 and arm.max() <= 1 and (base.max(0).values <= arm.min(0).values + 1e-6).any()  # own tiles
    # forward kinematics: the arm turns about y at the shoulder, 5 cm above the base, which stands at x = 0.1
    poses = scene.robot.link_poses(np.array([[0.0], [np.pi / 2]]), ["shoulder"])
    np.testing.assert_allclose(poses[0, 1, :3, 3], [0.1, 0, 0.05], atol=1e-9)
    np.testing.assert_allclose(poses[1, 1, :3, :3] @ [0, 0, 1], [1, 0, 0], atol=1e-9)


def test_render_sim_xarm_example(tmp_path, capsys):
    pytest.importorskip("pybullet_data")
    out = tmp_path / "xarm"
    argv = ["render-sim", str(EXAMPLE / "scene.yaml"), str(EXAMPLE / "trajectory.csv"), "--out", str(out),
            "--resolution", "64x80", "--backend", "embree"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert f"data.scene={EXAMPLE / 'scene.yaml'} data.real_states=JOINTS.csv" in printed
    assert "'system.robot_pairing_labels=[robot_base,robot_arm,robot_wrist]'" in printed
    frames = sorted((out / "uvl").glob("*.png"))
    assert len(frames) == 12
    labels = LabelTable.from_dict(yaml.safe_load((out / "labels.yaml").read_text()))
    assert labels.names == ("table", "cube", "can", "robot_base", "robot_arm", "robot_wrist")
    seen = set()
    for frame in frames:
        uvl = read_uvl(frame)
        assert uvl.shape == (3, 64, 80)
        gbuffer = uvl_to_gbuffer(uvl[None], labels, source=str(frame))
        assert 0 <= float(gbuffer.uv.min()) and float(gbuffer.uv.max()) <= 1
        seen |= set(gbuffer.label.unique().tolist())
    assert seen == set(range(labels.num_labels + 1))  # void and every label
    with np.load(out / "states.npz") as states:
        assert states["object_poses"].shape == (12, 10, 4, 4) and states["intrinsics"].shape == (12, 4)
        assert states["joints"].shape == (12, 6) and list(states["joint_names"]) == [f"joint{i}" for i in range(1, 7)]
        assert list(states["object_names"])[:3] == ["table", "cube", "can"]
    first = read_uvl(frames[0])  # the robot moves between the first and last frame
    assert not np.array_equal(first.numpy(), read_uvl(frames[-1]).numpy())


def test_states_npz_roundtrip_and_opencv_camera(tmp_path):
    scene = load_scene(_scene(tmp_path, {"urdf": "tiny.urdf"}))
    states = read_states(_csv(tmp_path, "frame,shoulder\n0,0.0\n1,0.5\n"))
    K = np.array([[100.0, 0, 31.5], [0, 100, 23.5], [0, 0, 1]])
    camera = {"K": K, "R": np.diag([1.0, -1, -1]), "t": np.array([0, 0, 2.0]), "width": 64, "height": 48}
    write_states(tmp_path / "s.npz", states.__class__(**{**states.__dict__, "camera": camera}))
    state, joints = to_frame_state(scene, read_states(tmp_path / "s.npz"), width=128, height=96)
    assert state.camera.width == 128 and np.allclose(state.camera.intrinsics[0].numpy(), [200, 200, 63.5, 47.5])
    assert joints.shape == (2, 1) and state.object_poses.shape == (2, 3, 4, 4)


def _csv(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "states.csv"
    path.write_text(text)
    return path


@pytest.mark.parametrize(("text", "message"), [
    ("frame,elbow\n0,0.1\n", r"states\.csv: unknown joints \['elbow'\]; the robot's joints are \['shoulder'\]"),
    ("frame,shoulder\n0,nan\n", r"states\.csv: joints holds NaN or infinity in 1 frames \(first: frame 0\)"),
    ("frame,shoulder\n0,abc\n", r"states\.csv: row 2, column 'shoulder': 'abc' is not a number"),
    ("frame,shoulder\n0,1,2\n", r"states\.csv: row 2 has 3 values for 2 columns"),
    ("frame,box.x,box.y\n0,0,0\n", r"states\.csv: object 'box' needs the columns .* missing \['box\.z'"),
    ("frame,box.x,box.y,box.z,box.qw,box.qx,box.qy,box.qz\n0,0,0,0,1,0,0,0\n",
     r"states\.csv: unknown objects \['box'\]; the scene's objects are \['floor'\]"),
    ("frame,arm.x,arm.y,arm.z,arm.qw,arm.qx,arm.qy,arm.qz\n0,0,0,0,1,0,0,0\n",
     r"unknown objects \['arm'\].*robot links are posed from the joint values"),
    ("frame,floor.x,floor.y,floor.z,floor.qw,floor.qx,floor.qy,floor.qz\n0,0,0,0,0,0,0,0\n",
     r"states\.csv: row 2: object 'floor' has a zero quaternion"),
    ("frame,shoulder\n1,0\n0,0\n", r"states\.csv: the frame column must increase"),
])
def test_states_errors_name_the_file_and_the_fix(tmp_path, text, message):
    scene = load_scene(_scene(tmp_path, {"urdf": "tiny.urdf"}))
    with pytest.raises(ValueError, match=message):
        to_frame_state(scene, read_states(_csv(tmp_path, text)), width=32, height=32)


def test_states_npz_shape_errors(tmp_path):
    np.savez(tmp_path / "s.npz", joint_names=np.array(["shoulder"]), joints=np.zeros((4, 2)))
    with pytest.raises(ValueError, match=r"s\.npz: joints must be \(frames, 1\) for the joint_names \['shoulder'\], "
                                         r"got \(4, 2\)"):
        read_states(tmp_path / "s.npz")
    np.savez(tmp_path / "s.npz", object_names=np.array(["floor"]), object_poses=np.zeros((4, 4, 4)))
    with pytest.raises(ValueError, match=r"s\.npz: object_poses must be \(4, 1, 4, 4\)"):
        read_states(tmp_path / "s.npz")
    np.savez(tmp_path / "s.npz", joint_names=np.array(["shoulder"]), joints=np.zeros((2, 1)),
             camera_eye=np.zeros((3, 3)), camera_target=np.ones(3), camera_fov_y_deg=np.array(40.0))
    scene = load_scene(_scene(tmp_path, {"urdf": "tiny.urdf"}))
    with pytest.raises(ValueError, match=r"s\.npz: camera eye must have shape \(3,\) or \(2, 3\), got \(3, 3\)"):
        to_frame_state(scene, read_states(tmp_path / "s.npz"), width=32, height=32)


def test_no_camera_is_an_error(tmp_path):
    scene = load_scene(_scene(tmp_path, {"urdf": "tiny.urdf"}))
    with pytest.raises(ValueError, match=r"states\.csv: no camera; add camera arrays .* or a `camera:` entry"):
        to_frame_state(scene, read_states(_csv(tmp_path, "frame,shoulder\n0,0\n")), width=32, height=32)


@pytest.mark.parametrize(("robot", "urdf", "error", "message"), [
    ({"urdf": "missing.urdf"}, URDF, FileNotFoundError, r"URDF file not found: .*missing\.urdf"),
    ({"urdf": "../tiny.urdf"}, URDF, ValueError, r"scene\.yaml: robot: urdf path '\.\./tiny\.urdf' leaves the scene"),
    ({"urdf": "tiny.urdf"}, URDF.replace('<box size="0.2 0.2 0.1"/>', '<mesh filename="package://tiny/base.stl"/>'),
     FileNotFoundError, r"tiny\.urdf: 1 mesh files not found \(link 'base': package://tiny/base\.stl\)"),
    ({"urdf": "tiny.urdf", "labels": {"robot": ["base", "elbow"]}}, URDF, ValueError,
     r"scene\.yaml: robot label 'robot' names unknown links \['elbow'\]; links of .* with visual geometry: "
     r"\['base', 'arm'\]"),
    ({"urdf": "tiny.urdf", "labels": {"robot": ["base"]}}, URDF, ValueError,
     r"robot links \['arm'\] have visual geometry but no label"),
    ({"urdf": "tiny.urdf", "labels": {"robot": ["base", "arm", "tool"]}}, URDF, ValueError,
     r"links \['tool'\] have no visual geometry"),
    ({"urdf": "tiny.urdf", "labels": {"a": ["base", "arm"], "b": ["arm"]}}, URDF, ValueError,
     r"robot links \['arm'\] are in two label groups"),
    ({"urdf": "tiny.urdf", "base": {"xyz": [0, 0]}}, URDF, ValueError, r"robot `base` must be \{xyz: \[x, y, z\]"),
])
def test_robot_entry_errors(tmp_path, robot, urdf, error, message):
    with pytest.raises(error, match=message):
        load_scene(_scene(tmp_path, robot, urdf))


def test_render_sim_cli_reports_errors(tmp_path, capsys):
    scene = _scene(tmp_path, {"urdf": "tiny.urdf"})
    states = _csv(tmp_path, "frame,elbow\n0,0\n")
    assert main(["render-sim", str(scene), str(states), "--out", str(tmp_path / "out"), "--backend", "embree"]) == 2
    err = capsys.readouterr().err
    assert "triton-s2r render-sim: error:" in err and "unknown joints ['elbow']" in err


@pytest.mark.gpu
def test_render_sim_backends_agree_on_a_robot_scene(tmp_path):
    """``render-sim`` with nvdiffrast writes the frames that embree writes (labels; UVs up to interpolation)."""
    import torch

    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    scene = _scene(tmp_path, {"urdf": "tiny.urdf", "base": {"xyz": [0.1, 0, 0]}})
    states = _csv(tmp_path, "frame,shoulder\n0,0.0\n1,0.6\n2,1.2\n")
    frames = {}
    for backend in ("embree", "nvdiffrast"):
        out = tmp_path / backend
        assert main(["render-sim", str(scene), str(states), "--out", str(out), "--resolution", "96x128",
                     "--backend", backend]) == 0
        labels = LabelTable.from_dict(yaml.safe_load((out / "labels.yaml").read_text()))
        frames[backend] = [uvl_to_gbuffer(read_uvl(f)[None], labels, source=str(f))
                           for f in sorted((out / "uvl").glob("*.png"))]
    assert len(frames["embree"]) == len(frames["nvdiffrast"]) == 3
    for a, b in zip(frames["embree"], frames["nvdiffrast"], strict=True):
        assert (a.label == b.label).float().mean() >= 0.995
        both = (a.label == b.label) & (a.label > 0)
        assert both.sum() > 500  # the robot and floor cover a good part of the frame
        assert (a.uv - b.uv).abs().permute(0, 2, 3, 1)[both].mean() < 2e-3  # 8-bit UVs in PNG: steps of 1/255
