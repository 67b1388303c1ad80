"""The robot of each real frame, rendered from the frame's logged joint states (docs/method.md §4.7).

A real robot logs its joint angles with every frame and its camera is calibrated, so where the robot stands in a
real frame is known even though the objects' poses are not. ``RobotViews`` renders, for real frames, the robot's
links and the scene's static objects (those whose pose is the same in every real state: the table), without the
objects that move, at the same resize and crop as the photos. The ``robot_pairing`` term then compares the
translation of that render with the photo over the robot's pixels (and, with ``system.robot_pairing_void``, over
the pixels the render leaves void, the backdrop).

Where the objects are tracked as well (``system.tracked_objects``: the real states pose them, from tags, motion
capture or a pose estimator), the renders show them too and the term compares their pixels with the robot's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from triton_s2r.render.gbuffer import GBuffer
from triton_s2r.render.rasterizer import UVLRasterizer
from triton_s2r.render.scene import FrameState, Scene


@dataclass(frozen=True)
class RobotViews:
    """Renders of the real frames' robot and static objects.

    Attributes:
        scene: the scene's robot links, its static objects, and with ``tracked`` its objects that move.
        states: (N, M, 4, 4) poses of those objects and the cameras of the N real frames.
        label_ids: (L,) int64 ids of the labels whose pixels the term compares: the robot's, and the tracked
            objects', on the renders' device.
        rasterizer: the backend that renders them.
        static_ids: (S,) int64 labels of the static objects (rendered), on the renders' device.
        object_ids: (O,) int64 labels whose place in the photos is unknown (not rendered): the objects that move,
            unless tracked, and those the real states do not pose, on the renders' device.
    """

    scene: Scene
    states: FrameState
    label_ids: Tensor
    rasterizer: UVLRasterizer
    static_ids: Tensor
    object_ids: Tensor

    @classmethod
    def from_states(cls, scene: Scene, states: FrameState, robot_labels: Sequence[str],
                    rasterizer: UVLRasterizer, tracked: bool = False) -> RobotViews:
        """Keep the robot's objects and those whose pose never changes over ``states``; with ``tracked``, every one.

        Args:
            scene: the objects the real states pose (a plain folder's states may leave some out).
            states: (N, M, 4, 4) their poses and the cameras of the N real frames.
            robot_labels: names of the robot's labels.
            rasterizer: the backend of the renders.
            tracked: keep the objects that move as well, and compare their pixels with the robot's.

        Raises:
            ValueError: a name of ``robot_labels`` is not a label of the scene, or no object carries one; or
                ``tracked`` and the states pose no object that moves.
        """
        missing = [name for name in robot_labels if name not in scene.labels.names]
        if missing or not robot_labels:
            raise ValueError(f"system.robot_pairing_labels {list(robot_labels)}: {missing or 'none given'} not among "
                             f"the scene's labels {list(scene.labels.names)}; list the robot's labels")
        ids = [scene.labels.id_of(name) for name in robot_labels]
        poses = states.object_poses
        static = (poses == poses[:1]).flatten(2).all(-1).all(0)  # (num_objects,)
        if not any(obj.label in ids for obj in scene.objects):
            raise ValueError(f"no object of the scene carries a label of system.robot_pairing_labels "
                             f"{list(robot_labels)}; list the labels of the robot's links")
        fixed = [i for i, obj in enumerate(scene.objects) if obj.label in ids or bool(static[i])]
        static_ids = sorted({scene.objects[i].label for i in fixed if scene.objects[i].label not in ids})
        moving = sorted({obj.label for i, obj in enumerate(scene.objects) if i not in fixed})
        unposed = set(range(1, scene.labels.num_labels + 1)) - {obj.label for obj in scene.objects}
        if tracked and not moving:
            raise ValueError("system.tracked_objects=true, but the real frames' states pose no object that moves "
                             "(only the robot and static objects): pose the tracked objects in the real states "
                             "(data/README.md, 'States of the real frames') or set system.tracked_objects=false")
        keep = list(range(len(scene.objects))) if tracked else fixed
        ids = ids + moving if tracked else ids
        moving_ids = sorted(unposed if tracked else unposed | set(moving))

        def on_device(values: list[int]) -> Tensor:
            return torch.tensor(values, dtype=torch.long, device=rasterizer.device)

        return cls(Scene(tuple(scene.objects[i] for i in keep), scene.labels),
                   FrameState(poses[:, keep].contiguous(), states.camera), on_device(ids), rasterizer,
                   on_device(static_ids), on_device(moving_ids))

    def render(self, frames: list[int], size: tuple[int, int], offsets: Tensor, crop: int) -> GBuffer:
        """The real frames ``frames`` resized to ``size`` (H', W') and cropped at ``offsets`` ((B, 2) top, left).

        Returns:
            A GBuffer of (B, 2, crop, crop) UVs and (B, crop, crop) labels, on the rasterizer's device.
        """
        state = self.states.select(frames)
        camera = state.camera.resized(*size).cropped(offsets[:, 0], offsets[:, 1], crop, crop)
        return self.rasterizer.render(self.scene, FrameState(state.object_poses, camera))
