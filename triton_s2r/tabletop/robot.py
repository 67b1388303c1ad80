"""The Franka Panda of the benchmark: meshes from pybullet_data, forward kinematics with yourdfpy.

Only dataset generation imports this (extra ``scenes``): the generated dataset holds the baked, posed
link meshes and per-frame link poses, so training and rendering need neither pybullet nor a URDF.
pybullet_data's Panda meshes carry palette UVs only (every vertex on a colour swatch), so each link is
unwrapped with xatlas once and the result baked into the dataset.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import trimesh

from triton_s2r.render.mesh import Mesh
from triton_s2r.utils.cache import cache_dir as default_cache_dir
from triton_s2r.utils.files import atomic_savez
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

    urdf: object
    link_meshes: dict[str, Mesh]

    @classmethod
    def load(cls, cache_dir: Path | None = None) -> Panda:
        """Load pybullet_data's Panda with UV-unwrapped links.

        The unwrap takes 10-20 s, so its result is cached in ``cache_dir`` (default
        ``utils.cache.cache_dir()``) and reused by later calls.
        """
        pybullet_data = require("pybullet_data", extra="scenes", package="pybullet")
        yourdfpy = require("yourdfpy", extra="scenes")
        xatlas = require("xatlas", extra="scenes")
        root = Path(pybullet_data.getDataPath()) / "franka_panda"
        urdf = yourdfpy.URDF.load(
            str(root / "panda.urdf"),
            filename_handler=lambda fname: str(root / fname.replace("package://", "")),
            build_scene_graph=True,
            load_meshes=True,
        )
        cache = (cache_dir or default_cache_dir()) / "panda_links_xatlas_v1.npz"
        if cache.is_file():
            with np.load(cache) as data:
                links = sorted({k.split("/")[0] for k in data.files})
                return cls(urdf, {k: Mesh.from_arrays(data[f"{k}/v"], data[f"{k}/f"], data[f"{k}/uv"], str(cache))
                                  for k in links})
        scene = urdf.scene
        parts: dict[str, list] = {}
        for node in scene.graph.nodes_geometry:
            _, geometry = scene.graph[node]
            link = scene.graph.transforms.parents[node]
            # The geometry's pose relative to its link frame.
            link_from_geometry = np.linalg.inv(scene.graph.get(link)[0]) @ scene.graph.get(node)[0]
            parts.setdefault(link, []).append(scene.geometry[geometry].copy().apply_transform(link_from_geometry))
        meshes = {}
        for link, pieces in parts.items():
            merged = trimesh.util.concatenate(pieces)
            vertices = np.asarray(merged.vertices, dtype=np.float32)
            vmapping, indices, uvs = xatlas.parametrize(vertices, np.asarray(merged.faces, dtype=np.uint32))
            meshes[link] = Mesh.from_arrays(vertices[vmapping], indices, uvs, source=f"pybullet_data panda {link}")
        cache.parent.mkdir(parents=True, exist_ok=True)
        arrays = {}
        for k, m in meshes.items():
            arrays.update({f"{k}/v": m.v_pos.numpy(), f"{k}/f": m.t_pos_idx.numpy(), f"{k}/uv": m.v_uv.numpy()})
        atomic_savez(cache, **arrays)
        return cls(urdf, meshes)

    def link_poses(self, joints: np.ndarray, fingers: float, base_pose: np.ndarray) -> dict[str, np.ndarray]:
        """World poses of every link with a mesh.

        Args:
            joints: (7,) arm joint angles in radians.
            fingers: finger opening per finger in metres, 0..0.04.
            base_pose: (4, 4) world_from_base.
        """
        cfg = dict(zip(ARM_JOINTS, joints.tolist(), strict=True))
        cfg["panda_finger_joint1"] = float(fingers)
        self.urdf.update_cfg(cfg)
        return {link: base_pose @ self.urdf.get_transform(link, "panda_link0") for link in self.link_meshes}

    def joint_limits(self) -> tuple[np.ndarray, np.ndarray]:
        """(7,) lower and upper limits of the arm joints."""
        joints = {j.name: j for j in self.urdf.robot.joints}
        lower = np.array([joints[n].limit.lower for n in ARM_JOINTS])
        upper = np.array([joints[n].limit.upper for n in ARM_JOINTS])
        return lower, upper
