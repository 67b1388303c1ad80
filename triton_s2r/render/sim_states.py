"""States from any simulator: per frame, joint values by name, object poses by name, and the camera.

Read from NPZ or CSV (format: data/README.md, "States from your simulator") and turned into a
``FrameState`` of a scene with a robot (forward kinematics) by ``to_frame_state``. Every error names the
file and the fix.
"""

from __future__ import annotations

import csv
import os
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import yaml

from triton_s2r.render.camera import Camera
from triton_s2r.render.scene import FrameState, Scene, load_scene

#: CSV column suffixes of an object pose: position (metres) and unit quaternion (w, x, y, z).
POSE_COLUMNS = ("x", "y", "z", "qw", "qx", "qy", "qz")
CAMERA_KEYS = ("eye", "target", "fov_y_deg", "K", "R", "t", "width", "height")


@dataclass(frozen=True)
class SimStates:
    """N frames of a simulator trajectory.

    Attributes:
        joint_names: the J joint names (URDF joint names of the scene's robot).
        joints: (N, J) float64 joint values (radians; metres for prismatic joints).
        object_names: the O object names (scene-file object names).
        object_poses: (N, O, 4, 4) float64 ``world_from_object``.
        camera: the camera entry (keys of ``CAMERA_KEYS``, arrays per frame or shared), or None: the scene
            file's ``camera``.
        source: the file, for messages.
    """

    joint_names: tuple[str, ...]
    joints: np.ndarray
    object_names: tuple[str, ...]
    object_poses: np.ndarray
    camera: Mapping[str, np.ndarray] | None
    source: str

    @property
    def num_frames(self) -> int:
        """N, the number of frames."""
        return self.joints.shape[0]


def read_states(path: str | os.PathLike) -> SimStates:
    """Read a states file: ``.npz`` (arrays) or ``.csv`` (one row per frame); see data/README.md.

    Raises:
        FileNotFoundError: no such file.
        ValueError: wrong shapes, NaN or infinity, unreadable values, or mismatched frame counts.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"states file not found: {path}")
    if path.suffix.lower() == ".csv":
        return _read_csv(path)
    if path.suffix.lower() != ".npz":
        raise ValueError(f"{path}: states files are .npz or .csv (data/README.md, 'States from your simulator')")
    with np.load(path, allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    n = _frame_count(arrays, path)
    joint_names = tuple(str(s) for s in arrays.get("joint_names", np.zeros(0, str)))
    joints = np.asarray(arrays.get("joints", np.zeros((n, 0))), dtype=np.float64)
    object_names = tuple(str(s) for s in arrays.get("object_names", np.zeros(0, str)))
    poses = np.asarray(arrays.get("object_poses", np.zeros((n, 0, 4, 4))), dtype=np.float64)
    camera = {k[len("camera_"):]: arrays[k] for k in arrays if k.startswith("camera_")} or None
    return _checked(SimStates(joint_names, joints, object_names, poses, camera, str(path)))


def write_states(path: str | os.PathLike, states: SimStates) -> None:
    """Write ``states`` in the NPZ states format (e.g. a converted CSV)."""
    from triton_s2r.utils.files import atomic_savez

    camera = {f"camera_{k}": np.asarray(v) for k, v in (states.camera or {}).items()}
    atomic_savez(path, joint_names=np.array(states.joint_names, dtype=str), joints=states.joints,
                 object_names=np.array(states.object_names, dtype=str), object_poses=states.object_poses, **camera)


def to_frame_state(scene: Scene, states: SimStates, *, width: int, height: int,
                   default_camera: Mapping | None = None) -> tuple[FrameState, np.ndarray]:
    """Pose every scene object (forward kinematics for the robot's links) and build the cameras.

    Objects absent from ``states`` keep the pose of their mesh file (identity): a table modelled in world
    coordinates needs no column. Robot joints absent from ``states`` stay at 0 (a warning names them).

    Args:
        scene: a scene from ``load_scene``, with a ``robot:`` entry if ``states`` has joints.
        states: from ``read_states``.
        width: image width in pixels.
        height: image height in pixels.
        default_camera: the scene file's ``camera`` entry, used when ``states`` has no camera.

    Returns:
        The (N frames) FrameState and (N, J_robot) float64 joint values in ``scene.robot.robot.joint_names``
        order ((N, 0) without a robot).

    Raises:
        ValueError: unknown joint or object names, no camera, or a malformed camera.
    """
    where, n = states.source, states.num_frames
    robot = scene.robot
    if states.joint_names and robot is None:
        raise ValueError(f"{where}: has joint values {list(states.joint_names)} but the scene has no robot; add a "
                         "`robot: {urdf: ...}` entry to the scene file")
    robot_joints = robot.robot.joint_names if robot is not None else ()
    unknown = [j for j in states.joint_names if j not in robot_joints]
    if unknown:
        raise ValueError(f"{where}: unknown joints {unknown}; the robot's joints are {list(robot_joints)} "
                         "(rename the columns or arrays to the URDF's joint names)")
    joints = np.zeros((n, len(robot_joints)))
    for k, name in enumerate(states.joint_names):
        joints[:, robot_joints.index(name)] = states.joints[:, k]
    names = [o.name for o in scene.objects]
    links = set(robot.link_labels) if robot is not None else set()
    wrong = [o for o in states.object_names if o not in names or o in links]
    if wrong:
        raise ValueError(f"{where}: unknown objects {wrong}; the scene's objects are "
                         f"{[o for o in names if o not in links]} (robot links are posed from the joint values)")
    missing = [j for j in robot_joints if j not in states.joint_names]
    if missing:
        warnings.warn(f"{where}: no values for joints {missing}; they stay at 0", stacklevel=2)
    poses = np.tile(np.eye(4), (n, len(names), 1, 1))
    for k, name in enumerate(states.object_names):
        poses[:, names.index(name)] = states.object_poses[:, k]
    if robot is not None:
        poses[:, [names.index(link) for link in robot.link_labels]] = robot.link_poses(joints, robot_joints)
    spec = states.camera if states.camera is not None else default_camera
    if spec is None:
        raise ValueError(f"{where}: no camera; add camera arrays to the states file or a `camera:` entry to the "
                         "scene file (look-at: eye, target, fov_y_deg; or OpenCV: K, R, t, width, height)")
    camera = make_camera(spec, n, width=width, height=height, where=where)
    return FrameState(torch.as_tensor(poses, dtype=torch.float32), camera), joints


def load_frame_states(scene_file: str | os.PathLike, states_file: str | os.PathLike, *, width: int,
                      height: int) -> tuple[Scene, SimStates, FrameState, np.ndarray]:
    """Load a scene file and a states file and pose the scene (``to_frame_state``, the scene file's camera by default).

    Returns:
        The scene, the states as read, their (N frames) FrameState and (N, J_robot) joint values.

    Raises:
        FileNotFoundError, ValueError: naming the file and the fix (see ``load_scene``, ``read_states``).
    """
    scene = load_scene(scene_file)
    spec = yaml.safe_load(Path(scene_file).read_text())
    states = read_states(states_file)
    state, joints = to_frame_state(scene, states, width=width, height=height, default_camera=spec.get("camera"))
    return scene, states, state, joints


def make_camera(spec: Mapping, n: int, *, width: int, height: int, where: str) -> Camera:
    """N cameras from a camera entry: look-at (``eye``, ``target``, ``fov_y_deg``) or OpenCV (``K``, ``R``, ``t``).

    An OpenCV entry also gives the ``width``, ``height`` that K was calibrated for; K is rescaled to width x height.
    Each value is shared by all frames or given per frame (a leading axis of N).
    """
    unknown = sorted(set(spec) - set(CAMERA_KEYS))
    if unknown:
        raise ValueError(f"{where}: unknown camera keys {unknown}; use {list(CAMERA_KEYS)}")

    def get(key: str, shape: tuple[int, ...]) -> np.ndarray:
        value = np.asarray(spec[key], dtype=np.float64)
        if value.shape not in (shape, (n, *shape)):
            raise ValueError(f"{where}: camera {key} must have shape {shape} or {(n, *shape)}, got {value.shape}")
        if not np.isfinite(value).all():
            raise ValueError(f"{where}: camera {key} holds NaN or infinity")
        return np.broadcast_to(value, (n, *shape))

    if {"eye", "target", "fov_y_deg"} <= set(spec):
        eye, target, fov = get("eye", (3,)), get("target", (3,)), get("fov_y_deg", ())
        cams = [Camera.look_at(eye[i], target[i], width=width, height=height, fov_y_deg=float(fov[i]))
                for i in range(n)]
        return Camera(torch.cat([c.world_from_camera for c in cams]), torch.cat([c.intrinsics for c in cams]),
                      width, height)
    if {"K", "width", "height"} <= set(spec):
        R = get("R", (3, 3)) if "R" in spec else np.broadcast_to(np.eye(3), (n, 3, 3))
        t = get("t", (3,)) if "t" in spec else np.zeros((n, 3))
        camera = Camera.from_opencv(np.ascontiguousarray(get("K", (3, 3))), R=np.ascontiguousarray(R),
                                    t=np.ascontiguousarray(t), width=int(spec["width"]), height=int(spec["height"]))
        return camera.resized(height, width)
    raise ValueError(f"{where}: a camera needs eye, target and fov_y_deg (look-at), or K, width and height (OpenCV, "
                     f"with R and t); got {sorted(spec)}")


def quaternion_matrix(q: np.ndarray) -> np.ndarray:
    """(..., 3, 3) rotations of (..., 4) unit quaternions (w, x, y, z); the input is normalised."""
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    w, x, y, z = np.moveaxis(q, -1, 0)
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
        np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
        np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1),
    ], -2)


def _read_csv(path: Path) -> SimStates:
    """``frame, <joint>..., <object>.x/.y/.z/.qw/.qx/.qy/.qz`` columns, one row per frame."""
    with path.open(newline="") as f:
        rows = list(csv.reader(f))
    if len(rows) < 2:
        raise ValueError(f"{path}: a states CSV needs a header row and at least one frame row")
    header, body = [h.strip() for h in rows[0]], rows[1:]
    values = np.empty((len(body), len(header)))
    for r, row in enumerate(body, start=2):
        if len(row) != len(header):
            raise ValueError(f"{path}: row {r} has {len(row)} values for {len(header)} columns")
        for c, text in enumerate(row):
            try:
                values[r - 2, c] = float(text)
            except ValueError:
                raise ValueError(f"{path}: row {r}, column {header[c]!r}: {text!r} is not a number") from None
    columns = dict(zip(header, values.T, strict=True))
    if "frame" in columns and not (np.diff(columns.pop("frame")) > 0).all():
        raise ValueError(f"{path}: the frame column must increase from row to row; sort the rows by frame")
    objects = list(dict.fromkeys(h.rsplit(".", 1)[0] for h in columns if "." in h))
    for name in objects:
        absent = [f"{name}.{s}" for s in POSE_COLUMNS if f"{name}.{s}" not in columns]
        extra = [h for h in columns if h.rsplit(".", 1)[0] == name and h.rsplit(".", 1)[1] not in POSE_COLUMNS]
        if absent or extra:
            raise ValueError(f"{path}: object {name!r} needs the columns {[f'{name}.{s}' for s in POSE_COLUMNS]}; "
                             f"missing {absent}, unknown {extra}")
    poses = np.tile(np.eye(4), (len(body), len(objects), 1, 1))
    for k, name in enumerate(objects):
        xyz = np.stack([columns[f"{name}.{s}"] for s in POSE_COLUMNS[:3]], -1)
        quat = np.stack([columns[f"{name}.{s}"] for s in POSE_COLUMNS[3:]], -1)
        if np.isfinite(quat).all() and (np.linalg.norm(quat, axis=-1) < 1e-8).any():
            row = int(np.argmax(np.linalg.norm(quat, axis=-1) < 1e-8)) + 2
            raise ValueError(f"{path}: row {row}: object {name!r} has a zero quaternion; write a unit quaternion "
                             "(qw, qx, qy, qz), e.g. 1, 0, 0, 0")
        poses[:, k, :3, :3], poses[:, k, :3, 3] = quaternion_matrix(quat), xyz
    joints = [h for h in columns if "." not in h]
    joint_values = np.stack([columns[j] for j in joints], -1) if joints else np.zeros((len(body), 0))
    return _checked(SimStates(tuple(joints), joint_values,
                              tuple(objects), poses, None, str(path)))


def _frame_count(arrays: Mapping[str, np.ndarray], path: Path) -> int:
    for key in ("joints", "object_poses"):
        if key in arrays and arrays[key].ndim >= 1:
            return arrays[key].shape[0]
    raise ValueError(f"{path}: a states NPZ needs `joints` (N, J) with `joint_names` (J,), and/or `object_poses` "
                     f"(N, O, 4, 4) with `object_names` (O,); found {sorted(arrays)}")


def _checked(s: SimStates) -> SimStates:
    """Raise on wrong shapes, mismatched names or frame counts, and NaN or infinity, naming the file."""
    n, where = s.joints.shape[0], s.source
    if s.joints.shape != (n, len(s.joint_names)):
        raise ValueError(f"{where}: joints must be (frames, {len(s.joint_names)}) for the joint_names "
                         f"{list(s.joint_names)}, got {s.joints.shape}")
    if s.object_poses.shape != (n, len(s.object_names), 4, 4):
        raise ValueError(f"{where}: object_poses must be ({n}, {len(s.object_names)}, 4, 4) for {n} frames and the "
                         f"object_names {list(s.object_names)}, got {s.object_poses.shape}")
    if n == 0:
        raise ValueError(f"{where}: no frames")
    for key, array in (("joints", s.joints), ("object_poses", s.object_poses)):
        bad = ~np.isfinite(array.reshape(n, -1)).all(1)
        if bad.any():
            raise ValueError(f"{where}: {key} holds NaN or infinity in {int(bad.sum())} frames (first: frame "
                             f"{int(np.argmax(bad))}); export finite values or drop those frames")
    if not np.allclose(s.object_poses[..., 3, :], [0, 0, 0, 1]):
        raise ValueError(f"{where}: object_poses must be 4x4 rigid transforms with last row [0, 0, 0, 1]")
    for names, what in ((s.joint_names, "joint"), (s.object_names, "object")):
        if len(set(names)) != len(names):
            raise ValueError(f"{where}: {what} names repeat: {sorted({x for x in names if names.count(x) > 1})}")
    return s
