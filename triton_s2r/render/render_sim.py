"""``triton-s2r render-sim``: render a simulator trajectory of a scene (with your robot) to UVL frames.

Example::

    triton-s2r render-sim examples/xarm/scene.yaml examples/xarm/trajectory.csv --out outputs/xarm --resolution 128

writes ``OUT/uvl/NNNNNN.png`` (16-bit UVL frames, reference TRITON format), ``OUT/states.npz`` (the dataset
layout of data/README.md: every object's pose, the cameras, the joints) and ``OUT/labels.yaml`` (the label
table), ready for ``triton-s2r train data=folders data.sim_dir=OUT/uvl ...`` and for
``triton-s2r translate RUN OUT/states.npz --scene SCENE``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

from triton_s2r.render.rasterizer import make_rasterizer
from triton_s2r.render.scene import LabelTable
from triton_s2r.render.sim_states import load_frame_states
from triton_s2r.render.uvl import gbuffer_to_uvl, write_uvl
from triton_s2r.utils.files import atomic_savez, atomic_write

DEFAULT_RESOLUTION = 256


@dataclass(frozen=True)
class RenderSimResult:
    """What ``render_sim`` wrote.

    Attributes:
        out: the output folder.
        num_frames: UVL frames written.
        size: (H, W) of each frame.
        labels: the scene's label table.
        backend: the render backend used.
        robot_labels: the labels of the robot's links (none without a robot).
    """

    out: Path
    num_frames: int
    size: tuple[int, int]
    labels: LabelTable
    backend: str
    robot_labels: tuple[str, ...] = ()

    def train_command(self, photos: str = "PHOTOS") -> str:
        """The ``triton-s2r train`` command for these frames and a folder of real photos."""
        names = ",".join(self.labels.names)
        values = ",".join(str(v) for v in self.labels.values)
        return (f"triton-s2r train data=folders data.sim_dir={self.out / 'uvl'} data.real_dir={photos} "
                f"'data.labels.names=[{names}]' 'data.labels.values=[{values}]' "
                f"data.labels.void_value={self.labels.void_value}")

    def robot_pairing_overrides(self, scene_file: str, real_states: str = "JOINTS.csv") -> str:
        """What to add to ``train_command`` to supervise the robot through the photos' logged joints (§4.7)."""
        return (f"data.scene={scene_file} data.real_states={real_states} "
                f"'system.robot_pairing_labels=[{','.join(self.robot_labels)}]'")


def render_sim(
    scene_file: str | os.PathLike,
    states_file: str | os.PathLike,
    out: str | os.PathLike,
    *,
    size: tuple[int, int] = (DEFAULT_RESOLUTION, DEFAULT_RESOLUTION),
    backend: str = "auto",
    batch_size: int = 8,
    uvl_format: str = "png",
) -> RenderSimResult:
    """Render every frame of ``states_file`` (NPZ or CSV, see ``sim_states``) of the scene to UVL files.

    Args:
        scene_file: scene YAML (``load_scene``), with a ``robot:`` entry for joint values and optionally a
            ``camera:`` entry for states without cameras.
        states_file: the trajectory.
        out: output folder (created; existing frames of the same names are replaced).
        size: (H, W) in pixels.
        backend: ``auto``, ``embree`` or ``nvdiffrast``.
        batch_size: frames per render call.
        uvl_format: ``png`` (16-bit) or ``exr`` (float32).

    Raises:
        FileNotFoundError, ValueError: naming the file and the fix (see ``load_scene``, ``read_states``).
    """
    if uvl_format not in ("png", "exr"):
        raise ValueError(f"UVL format must be png or exr, got {uvl_format!r}")
    height, width = size
    if height < 1 or width < 1:
        raise ValueError(f"resolution must be positive, got {height}x{width}")
    scene, _, state, joints = load_frame_states(scene_file, states_file, width=width, height=height)
    rasterizer = make_rasterizer(backend)
    out = Path(out)
    (out / "uvl").mkdir(parents=True, exist_ok=True)
    for first in range(0, state.batch_size, batch_size):
        index = list(range(first, min(first + batch_size, state.batch_size)))
        uvl = gbuffer_to_uvl(rasterizer.render(scene, state.select(index).to(rasterizer.device)), scene.labels)
        for i, frame in zip(index, uvl.cpu(), strict=True):
            write_uvl(out / "uvl" / f"{i:06d}.{uvl_format}", frame)
    robot_joints = scene.robot.robot.joint_names if scene.robot is not None else ()
    atomic_savez(out / "states.npz", object_poses=state.object_poses.numpy(),
                 world_from_camera=state.camera.world_from_camera.numpy(), intrinsics=state.camera.intrinsics.numpy(),
                 joints=joints, joint_names=np.array(robot_joints, dtype=str),
                 object_names=np.array([o.name for o in scene.objects], dtype=str))
    with atomic_write(out / "labels.yaml") as tmp:
        tmp.write_text(yaml.safe_dump(scene.labels.to_dict(), sort_keys=False))
    return RenderSimResult(out, state.batch_size, (height, width), scene.labels, rasterizer.name,
                           scene.robot.label_names if scene.robot is not None else ())
