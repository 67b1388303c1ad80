"""The Franka Panda of the benchmark: meshes from pybullet_data, forward kinematics with yourdfpy.

Only dataset generation imports this (extra ``scenes``): the generated dataset holds the baked, posed
link meshes and per-frame link poses, so training and rendering need neither pybullet nor a URDF.
pybullet_data's Panda meshes carry palette UVs only (every vertex on a colour swatch), so each link is
unwrapped with xatlas once (``render.urdf``, shared with user scene files) and the result baked into the dataset.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from triton_s2r.render.mesh import Mesh
from triton_s2r.render.urdf import Robot, load_robot
from triton_s2r.utils.cache import cache_dir as default_cache_dir
from triton_s2r.utils.optional import require

#: Label groups of the robot: each group gets one label (and one learned texture).
LINK_GROUPS: dict[str, tuple[str, ...]] = {
    "robot_base": ("panda_link0", "panda_link1"),
    "robot_arm": ("panda_link2", "panda_link3", "panda_link4", "panda_link5", "panda_link6", "panda_link7"),
    "robot_hand": ("panda_hand", "panda_leftfinger", "panda_rightfinger"),
}
ARM_JOINTS = tuple(f"panda_joint{i}" for i in range(1, 8))
#: A comfortable configuration above the table, and how far random states stray from it (radians).
HOME = np.array([0.0, -0.3, 0.0, -2.2, 0.0, 2.0, 0.8])
SPREAD = np.array([1.2, 0.5, 0.6, 0.5, 1.0, 0.5, 1.2])


@dataclass
class Panda:
    """A Panda arm: the URDF model and each link's baked, UV-unwrapped mesh in the link frame."""

    robot: Robot

    @property
    def urdf(self) -> object:
        """The ``yourdfpy.URDF`` of the arm (kinematics)."""
        return self.robot.urdf

    @property
    def link_meshes(self) -> dict[str, Mesh]:
        """Link name -> baked, UV-unwrapped mesh in the link frame."""
        return self.robot.link_meshes

    @classmethod
    def load(cls, cache_dir: Path | None = None) -> Panda:
        """Load pybullet_data's Panda with UV-unwrapped links (``render.urdf.load_robot``).

        The unwrap takes 10-20 s, so its result is cached in ``cache_dir`` (default
        ``utils.cache.cache_dir()``) and reused by later calls.
        """
        pybullet_data = require("pybullet_data", extra="scenes", package="pybullet")
        urdf = Path(pybullet_data.getDataPath()) / "franka_panda" / "panda.urdf"
        cache = (cache_dir or default_cache_dir()) / "panda_links_xatlas_v1.npz"
        # Always unwrapped: the palette UVs of a few links would pass `uv_problem`, and the baked benchmark
        # must not depend on that.
        return cls(load_robot(urdf, always_unwrap=True, cache_file=cache))

    def link_poses(self, joints: np.ndarray, fingers: float, base_pose: np.ndarray) -> dict[str, np.ndarray]:
        """World poses of every link with a mesh.

        Args:
            joints: (7,) arm joint angles in radians.
            fingers: finger opening per finger in metres, 0..0.04.
            base_pose: (4, 4) world_from_base.
        """
        cfg = dict(zip(ARM_JOINTS, joints.tolist(), strict=True))
        cfg["panda_finger_joint1"] = float(fingers)
        return {link: base_pose @ pose for link, pose in self.robot.link_poses(cfg).items()}

    def joint_limits(self) -> tuple[np.ndarray, np.ndarray]:
        """(7,) lower and upper limits of the arm joints."""
        return self.robot.joint_limits(ARM_JOINTS)
