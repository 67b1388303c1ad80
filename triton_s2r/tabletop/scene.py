"""The tabletop benchmark scene: a Franka Panda, a table and five UV-mapped objects, with random states.

World frame: z up, metres, table top at z = 0 centred at the origin; the robot base stands on the table
at x = -0.45. Labels (one learned texture each): the table, three robot link groups, three alphabet
blocks, a ball and a can.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

import numpy as np
import torch

from triton_s2r.render.camera import Camera
from triton_s2r.render.primitives import box, cylinder, uv_sphere
from triton_s2r.render.scene import FrameState, LabelTable, Scene, SceneObject
from triton_s2r.tabletop.robot import HOME, LINK_GROUPS, SPREAD, Panda

TABLE_SIZE = (1.4, 1.0, 0.04)
ROBOT_BASE = (-0.45, 0.0)
BLOCK = 0.07
#: Object name -> (mesh factory, footprint radius for non-overlap, height of its centre above the table).
OBJECTS = {
    "block_a": (lambda: box((BLOCK, BLOCK, BLOCK)), 0.055, BLOCK / 2),
    "block_b": (lambda: box((BLOCK, BLOCK, BLOCK)), 0.055, BLOCK / 2),
    "block_c": (lambda: box((BLOCK, BLOCK, BLOCK)), 0.055, BLOCK / 2),
    "ball": (lambda: uv_sphere(0.045, rings=24, segments=48), 0.05, 0.045),
    "can": (lambda: cylinder(0.033, 0.12, segments=48), 0.04, 0.06),
}
#: Where objects may stand (x range, y range), in front of the robot and within its reach.
OBJECT_REGION = ((-0.15, 0.4), (-0.35, 0.35))
NOMINAL_EYE = (0.95, -1.0, 0.9)
NOMINAL_TARGET = (-0.08, 0.0, 0.25)
NOMINAL_FOV_DEG = 48.0


def label_table() -> LabelTable:
    """The benchmark's labels, values spread over 1..255 as in the reference datasets."""
    return LabelTable.evenly_spaced(["table", *LINK_GROUPS, *OBJECTS])


def build_scene(panda: Panda) -> Scene:
    """The benchmark scene with every mesh in its own frame (poses come from ``FrameState``).

    Object order: table, the robot links (``LINK_GROUPS`` order), then ``OBJECTS``.
    """
    labels = label_table()
    table = box(TABLE_SIZE)
    objects = [SceneObject("table", labels.id_of("table"), table)]
    for group, links in LINK_GROUPS.items():  # the links of a group share a texture, each in its own UV tile
        objects += [SceneObject(link, labels.id_of(group), panda.link_meshes[link].in_uv_tile(i, len(links)))
                    for i, link in enumerate(links)]
    objects += [SceneObject(name, labels.id_of(name), make()) for name, (make, _, _) in OBJECTS.items()]
    return Scene(tuple(objects), labels)


def _pose(x: float, y: float, z: float, yaw: float = 0.0) -> np.ndarray:
    c, s = math.cos(yaw), math.sin(yaw)
    return np.array([[c, -s, 0, x], [s, c, 0, y], [0, 0, 1, z], [0, 0, 0, 1]], dtype=np.float64)


@dataclass(frozen=True)
class StateSample:
    """A batch of sampled scene states, before posing the robot.

    Attributes:
        joints: (B, 7) arm joint angles (radians).
        fingers: (B,) finger opening (metres, 0..0.04).
        object_xy_yaw: (B, len(OBJECTS), 3) positions on the table and yaw.
        eye, target: (B, 3) camera centre and look-at point.
        fov_deg: (B,) vertical field of view.
    """

    joints: np.ndarray
    fingers: np.ndarray
    object_xy_yaw: np.ndarray
    eye: np.ndarray
    target: np.ndarray
    fov_deg: np.ndarray


def nominal_eye(azimuth_deg: float = 0.0) -> np.ndarray:
    """(3,) the nominal camera centre, orbited by ``azimuth_deg`` about the vertical axis through the look-at point."""
    a = math.radians(azimuth_deg)
    x, y = NOMINAL_EYE[0] - NOMINAL_TARGET[0], NOMINAL_EYE[1] - NOMINAL_TARGET[1]
    # The rotated offset minus the original one, so that 0 degrees gives NOMINAL_EYE exactly (same datasets).
    shift = [(math.cos(a) - 1) * x - math.sin(a) * y, math.sin(a) * x + (math.cos(a) - 1) * y, 0.0]
    return np.asarray(NOMINAL_EYE) + np.asarray(shift)


def sample_states(rng: np.random.Generator, count: int, limits: tuple[np.ndarray, np.ndarray],
                  camera_azimuth_deg: float = 0.0) -> StateSample:
    """Independent random states: arm configurations, non-overlapping objects, jittered cameras.

    ``camera_azimuth_deg`` orbits the nominal view about the table's vertical axis (``nominal_eye``).
    """
    joints = np.clip(HOME + rng.uniform(-1, 1, (count, 7)) * SPREAD, *limits)
    objects = np.stack([_place_objects(rng) for _ in range(count)])
    eye = nominal_eye(camera_azimuth_deg) + rng.uniform(-0.08, 0.08, (count, 3))
    target = np.asarray(NOMINAL_TARGET) + rng.uniform(-0.04, 0.04, (count, 3))
    return StateSample(joints, rng.uniform(0, 0.04, count), objects, eye, target,
                       NOMINAL_FOV_DEG + rng.uniform(-3, 3, count))


def sample_trajectory(rng: np.random.Generator, frames: int, limits: tuple[np.ndarray, np.ndarray],
                      camera_azimuth_deg: float = 0.0) -> StateSample:
    """A smooth video: the arm moves between two configurations while one block is pushed along a line.

    The camera is fixed for the sequence (a jittered nominal view), so both camera-fixed surfaces (table)
    and moving ones (arm, pushed block) can be judged for consistency.
    """
    start, end = sample_states(rng, 2, limits).joints
    s = 0.5 - 0.5 * np.cos(np.linspace(0, math.pi, frames))  # ease in and out
    joints = start + s[:, None] * (end - start)
    objects = np.repeat(_place_objects(rng)[None], frames, axis=0)
    pushed = rng.integers(0, 3)  # one of the blocks
    direction = rng.uniform(0, 2 * math.pi)
    objects[:, pushed, 0] += s * 0.15 * math.cos(direction)
    objects[:, pushed, 1] += s * 0.15 * math.sin(direction)
    objects[:, pushed, 2] += s * rng.uniform(-0.5, 0.5)  # it turns while sliding
    view = sample_states(rng, 1, limits, camera_azimuth_deg)
    return StateSample(joints, np.full(frames, view.fingers[0]), objects, np.repeat(view.eye, frames, 0),
                       np.repeat(view.target, frames, 0), np.repeat(view.fov_deg, frames))


def sample_clips(rng: np.random.Generator, count: int, clip_frames: int, trajectory_frames: int,
                 limits: tuple[np.ndarray, np.ndarray], camera_azimuth_deg: float = 0.0) -> StateSample:
    """``count`` states in clips of ``clip_frames`` consecutive frames, each clip from its own trajectory.

    Each clip is a window, at a random start, of a ``sample_trajectory`` of ``trajectory_frames`` frames, so
    neighbouring frames of a clip differ as neighbouring frames of a video sequence do.

    Raises:
        ValueError: ``count`` is not a multiple of ``clip_frames``, or a clip is longer than a trajectory.
    """
    if clip_frames < 1 or count % clip_frames or clip_frames > trajectory_frames:
        raise ValueError(f"{count} frames do not split into clips of {clip_frames} consecutive frames of "
                         f"{trajectory_frames}-frame trajectories: choose a divisor of the frame count")
    windows = []
    for _ in range(count // clip_frames):
        start = int(rng.integers(0, trajectory_frames - clip_frames + 1))
        trajectory = sample_trajectory(rng, trajectory_frames, limits, camera_azimuth_deg)
        windows.append({f.name: getattr(trajectory, f.name)[start:start + clip_frames] for f in fields(StateSample)})
    return StateSample(**{name: np.concatenate([w[name] for w in windows]) for name in windows[0]})


def _place_objects(rng: np.random.Generator, attempts: int = 1000) -> np.ndarray:
    """(len(OBJECTS), 3) x, y, yaw with footprints that do not overlap (rejection sampling)."""
    (x0, x1), (y0, y1) = OBJECT_REGION
    radii = [r for _, r, _ in OBJECTS.values()]
    for _ in range(attempts):
        xy = np.stack([rng.uniform(x0, x1, len(radii)), rng.uniform(y0, y1, len(radii))], -1)
        gaps = np.linalg.norm(xy[:, None] - xy[None], axis=-1) - (np.add.outer(radii, radii))
        if (gaps[~np.eye(len(radii), dtype=bool)] > 0.01).all():
            return np.concatenate([xy, rng.uniform(0, 2 * math.pi, (len(radii), 1))], -1)
    raise RuntimeError("could not place the objects without overlap; enlarge OBJECT_REGION")


def frame_state(scene: Scene, panda: Panda, sample: StateSample, *, width: int, height: int) -> FrameState:
    """Pose every scene object (forward kinematics for the robot) and build the cameras."""
    names = [o.name for o in scene.objects]
    base = _pose(*ROBOT_BASE, 0.0)
    poses = np.zeros((len(sample.joints), len(names), 4, 4))
    for b in range(len(sample.joints)):
        poses[b, names.index("table")] = _pose(0, 0, -TABLE_SIZE[2] / 2)
        for link, pose in panda.link_poses(sample.joints[b], sample.fingers[b], base).items():
            poses[b, names.index(link)] = pose
        for k, (name, (_, _, z)) in enumerate(OBJECTS.items()):
            x, y, yaw = sample.object_xy_yaw[b, k]
            poses[b, names.index(name)] = _pose(x, y, z, yaw)
    cameras = [
        Camera.look_at(sample.eye[b], sample.target[b], width=width, height=height, fov_y_deg=float(sample.fov_deg[b]))
        for b in range(len(sample.joints))
    ]
    camera = Camera(torch.cat([c.world_from_camera for c in cameras]), torch.cat([c.intrinsics for c in cameras]),
                    width, height)
    return FrameState(torch.as_tensor(poses, dtype=torch.float32), camera)
