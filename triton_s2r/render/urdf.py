"""Robots from URDF files: one UV-mapped mesh per link, and forward kinematics with yourdfpy.

Shared by scene files (a ``robot:`` entry, see ``load_scene`` and docs/rendering.md) and the built-in
benchmark's Panda (``tabletop/robot.py``). A link's visual geometries are merged into one mesh in the link
frame; when its UVs cannot carry a learned texture (STL files have none, pybullet_data's Panda has palette
UVs) it is unwrapped with xatlas, and the unwrapped links are cached (``utils.cache.cache_dir``).
"""

from __future__ import annotations

import hashlib
import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np
import trimesh

from triton_s2r.render.mesh import Mesh, uv_problem
from triton_s2r.utils.cache import CACHE_ENV, cache_dir
from triton_s2r.utils.files import atomic_savez
from triton_s2r.utils.optional import require

#: Bumped when the baked link meshes change for the same input files (invalidates ``urdf/*.links.npz``).
CACHE_VERSION = "urdf-links-v1"


@dataclass
class Robot:
    """An articulated robot: the yourdfpy model and each visual link's mesh in its link frame.

    Attributes:
        urdf: the ``yourdfpy.URDF`` (kinematics; its configuration changes with ``link_poses``).
        link_meshes: link name -> mesh in the link frame with usable UVs, in the URDF's link order.
        source: the URDF file.
    """

    urdf: Any
    link_meshes: dict[str, Mesh]
    source: Path

    @property
    def joint_names(self) -> tuple[str, ...]:
        """The actuated joints (mimic and fixed joints excluded), in URDF order."""
        return tuple(self.urdf.actuated_joint_names)

    def joint_limits(self, names: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """(len(names),) lower and upper limits of the joints ``names`` (radians or metres)."""
        joints = {j.name: j for j in self.urdf.robot.joints}
        return (np.array([joints[n].limit.lower for n in names]), np.array([joints[n].limit.upper for n in names]))

    def link_poses(self, joints: Mapping[str, float]) -> dict[str, np.ndarray]:
        """``base_from_link`` (4, 4) float64 of every link in ``link_meshes`` for one configuration.

        Args:
            joints: joint name -> angle (radians) or offset (metres); joints left out stay at 0.

        Raises:
            ValueError: a name is not an actuated joint of the robot.
        """
        unknown = sorted(set(joints) - set(self.joint_names))
        if unknown:
            raise ValueError(f"{self.source}: unknown joints {unknown}; the robot's joints are "
                             f"{list(self.joint_names)}")
        cfg = dict.fromkeys(self.joint_names, 0.0) | {k: float(v) for k, v in joints.items()}
        self.urdf.update_cfg(cfg)
        base = self.urdf.base_link
        return {link: np.asarray(self.urdf.get_transform(link, base), dtype=np.float64) for link in self.link_meshes}


def load_robot(path: str | os.PathLike, *, always_unwrap: bool = False, cache_file: Path | None = None) -> Robot:
    """Load a URDF with a UV-mapped mesh per visual link.

    Mesh references are resolved by ``resolve_mesh_path``. A link whose merged visual meshes have no usable
    UVs (``mesh.uv_problem``), or every link with ``always_unwrap``, is unwrapped with xatlas; the result is
    cached in ``cache_file`` (default ``<cache_dir()>/urdf/<sha256 of the URDF and its meshes>.links.npz``).

    Raises:
        FileNotFoundError: the URDF or a mesh it names is missing (all missing meshes are listed).
        ValueError: the URDF cannot be parsed, or no link has visual geometry.
        ImportError: yourdfpy or xatlas is not installed (extra ``robot``).
    """
    yourdfpy = require("yourdfpy", extra="robot")
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"URDF file not found: {path}")
    try:
        parsed = yourdfpy.URDF.load(str(path), build_scene_graph=False, load_meshes=False)
    except Exception as exc:  # lxml and yourdfpy raise many types for malformed files
        raise ValueError(f"{path}: not a readable URDF ({type(exc).__name__}: {exc})") from exc
    meshes = {}
    for link in parsed.robot.links:
        for visual in link.visuals:
            name = visual.geometry.mesh.filename if visual.geometry and visual.geometry.mesh else None
            if name is not None:
                meshes[(link.name, name)] = resolve_mesh_path(path, name)
    missing = [f"link {link!r}: {name}" for (link, name), file in meshes.items() if file is None]
    if missing:
        raise FileNotFoundError(f"{path}: {len(missing)} mesh files not found ({'; '.join(missing)}); URDF mesh "
                                "paths are looked up next to the URDF and, for package://PKG/..., in PKG folders "
                                "beside the URDF or up to two folders above it: copy the meshes there")
    urdf = yourdfpy.URDF(robot=parsed.robot, build_scene_graph=True, load_meshes=True,
                         filename_handler=lambda fname: str(resolve_mesh_path(path, fname) or fname))
    if cache_file is None:
        digest = hashlib.sha256(CACHE_VERSION.encode() + path.read_bytes() + bytes(always_unwrap))
        for file in sorted({str(f) for f in meshes.values()}):
            digest.update(Path(file).read_bytes())
        cache_file = cache_dir() / "urdf" / f"{digest.hexdigest()}.links.npz"
    link_order = [link.name for link in parsed.robot.links]
    if cache_file.is_file():
        with np.load(cache_file) as data:
            names = {k.split("/")[0] for k in data.files}
            return Robot(urdf, {k: Mesh.from_arrays(data[f"{k}/v"], data[f"{k}/f"], data[f"{k}/uv"],
                                                    f"{path} link {k}") for k in link_order if k in names}, path)
    link_meshes = {link: _link_mesh(pieces, f"{path} link {link}", always_unwrap)
                   for link, pieces in sorted(_link_pieces(urdf).items(), key=lambda kv: link_order.index(kv[0]))}
    if not link_meshes:
        raise ValueError(f"{path}: no link has visual geometry; nothing to render")
    arrays = {}
    for k, m in link_meshes.items():
        arrays.update({f"{k}/v": m.v_pos.numpy(), f"{k}/f": m.t_pos_idx.numpy(), f"{k}/uv": m.v_uv.numpy()})
    try:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        atomic_savez(cache_file, **arrays)
    except OSError as exc:  # a read-only home: the meshes are right, only the next load is slower
        warnings.warn(f"{path}: could not cache its unwrapped links in {cache_file.parent} ({exc}); set "
                      f"{CACHE_ENV} to a writable folder", stacklevel=2)
    return Robot(urdf, link_meshes, path)


def resolve_mesh_path(urdf_file: Path, filename: str) -> Path | None:
    """The file a URDF mesh reference names, or None if it is not found.

    ``package://PKG/rest`` is looked up as ``D/PKG/rest`` and ``D/rest`` for D the URDF's folder and the two
    folders above it (ROS packages keep the URDF in ``PKG/urdf/``); ``file://`` and absolute paths are taken
    as written; other relative paths are relative to the URDF's folder.
    """
    folder = urdf_file.parent
    if filename.startswith("package://"):
        package, _, rest = filename[len("package://"):].partition("/")
        bases = [folder, folder.parent, folder.parent.parent]
        candidates = [b / package / rest for b in bases] + [b / rest for b in bases[:2]]
    elif filename.startswith("file://"):
        candidates = [Path(filename[len("file://"):])]
    else:
        candidates = [folder / filename]
    return next((c for c in candidates if c.is_file()), None)


def _link_pieces(urdf: Any) -> dict[str, list[trimesh.Trimesh]]:
    """Each link's visual geometries, moved into the link frame (the scene graph holds them posed)."""
    scene = urdf.scene
    pieces: dict[str, list[trimesh.Trimesh]] = {}
    for node in scene.graph.nodes_geometry:
        _, geometry = scene.graph[node]
        link = scene.graph.transforms.parents[node]
        link_from_geometry = np.linalg.inv(scene.graph.get(link)[0]) @ scene.graph.get(node)[0]
        pieces.setdefault(link, []).append(scene.geometry[geometry].copy().apply_transform(link_from_geometry))
    return pieces


def _link_mesh(pieces: list[trimesh.Trimesh], source: str, always_unwrap: bool) -> Mesh:
    """One link's pieces merged; its own UVs if usable (and not ``always_unwrap``), else an xatlas unwrap."""
    # concatenate is typed to return any Geometry; of Trimesh pieces it returns a Trimesh.
    merged = cast(trimesh.Trimesh, trimesh.util.concatenate(pieces)) if len(pieces) > 1 else pieces[0]
    vertices = np.asarray(merged.vertices, dtype=np.float32)
    uv = getattr(merged.visual, "uv", None)
    if not always_unwrap and uv is not None and len(uv) == len(vertices):
        mesh = Mesh.from_arrays(vertices, merged.faces, uv, source)
        if uv_problem(mesh) is None:
            return mesh
    xatlas = require("xatlas", extra="robot")
    vmapping, indices, uvs = xatlas.parametrize(vertices, np.asarray(merged.faces, dtype=np.uint32))
    return Mesh.from_arrays(vertices[vmapping], indices, uvs, source)


@dataclass
class SceneRobot:
    """A robot placed in a scene: which label each link shows, its UV tile, and where its base stands.

    Attributes:
        robot: the loaded robot.
        world_from_base: (4, 4) float64 pose of the URDF's base link in the world.
        link_labels: link name -> label name, for every link with a mesh, in scene-object order.
        link_tiles: link name -> (index, count): the link's UV tile among the links of its label.
    """

    robot: Robot
    world_from_base: np.ndarray
    link_labels: dict[str, str]
    link_tiles: dict[str, tuple[int, int]]

    @property
    def label_names(self) -> tuple[str, ...]:
        """The robot's label names, each once, in the order of its links."""
        return tuple(dict.fromkeys(self.link_labels.values()))

    def link_meshes(self) -> dict[str, Mesh]:
        """Each link's mesh with its UVs in its tile (``Mesh.in_uv_tile``), in ``link_labels`` order."""
        return {link: self.robot.link_meshes[link].in_uv_tile(*self.link_tiles[link]) for link in self.link_labels}

    def link_poses(self, joints: np.ndarray, joint_names: Sequence[str]) -> np.ndarray:
        """Forward kinematics for a batch of configurations.

        Args:
            joints: (N, J) joint values (radians, or metres for prismatic joints).
            joint_names: the J joint names; joints of the robot left out stay at 0.

        Returns:
            (N, L, 4, 4) float64 ``world_from_link`` of the ``link_labels`` links.
        """
        poses = np.empty((len(joints), len(self.link_labels), 4, 4))
        for n, values in enumerate(np.asarray(joints, dtype=np.float64)):
            by_link = self.robot.link_poses(dict(zip(joint_names, values.tolist(), strict=True)))
            poses[n] = [self.world_from_base @ by_link[link] for link in self.link_labels]
        return poses


def scene_robot(entry: Mapping, urdf_file: Path, where: str) -> SceneRobot:
    """The robot of a scene file's ``robot:`` entry (format in ``load_scene``).

    Args:
        entry: the entry: ``urdf`` (already resolved to ``urdf_file``), optional ``labels`` (label name ->
            list of links; default: one label per link, named after it) and ``base`` (``xyz``, ``rpy``).
        urdf_file: the URDF path.
        where: the scene file, for messages.

    Raises:
        ValueError: a label group names an unknown link or a link without visual geometry, a link is in two
            groups or in none, or ``base`` is malformed.
    """
    robot = load_robot(urdf_file)
    visual = list(robot.link_meshes)
    groups = entry.get("labels") or {link: [link] for link in visual}
    if not isinstance(groups, Mapping) or not all(isinstance(v, list) and v for v in groups.values()):
        raise ValueError(f"{where}: robot `labels` must map label names to non-empty lists of link names, got "
                         f"{groups!r}")
    link_labels: dict[str, str] = {}
    link_tiles: dict[str, tuple[int, int]] = {}
    all_links = {link.name for link in robot.urdf.robot.links}
    for label, links in groups.items():
        unknown = [str(k) for k in links if k not in all_links]
        if unknown:
            raise ValueError(f"{where}: robot label {label!r} names unknown links {unknown}; links of {urdf_file} "
                             f"with visual geometry: {visual}")
        bare = [k for k in links if k not in robot.link_meshes]
        if bare:
            raise ValueError(f"{where}: robot label {label!r}: links {bare} have no visual geometry; remove them "
                             f"(links with geometry: {visual})")
        twice = [k for k in links if k in link_labels]
        if twice:
            raise ValueError(f"{where}: robot links {twice} are in two label groups; put each link in one")
        for i, link in enumerate(links):  # links sharing a label share its texture: one UV tile each
            link_labels[link], link_tiles[link] = str(label), (i, len(links))
    unlabelled = [k for k in visual if k not in link_labels]
    if unlabelled:
        raise ValueError(f"{where}: robot links {unlabelled} have visual geometry but no label; add them to a group "
                         "of the robot's `labels`")
    base = entry.get("base") or {}
    try:
        roll, pitch, yaw = (float(a) for a in base.get("rpy", (0, 0, 0)))
        world_from_base = trimesh.transformations.euler_matrix(roll, pitch, yaw, "sxyz")
        world_from_base[:3, 3] = [float(x) for x in base.get("xyz", (0, 0, 0))]
    except (AttributeError, TypeError, ValueError) as exc:
        raise ValueError(f"{where}: robot `base` must be {{xyz: [x, y, z], rpy: [roll, pitch, yaw]}} (metres, "
                         f"radians), got {base!r}") from exc
    order = {link: i for i, link in enumerate(visual)}  # URDF order, whatever the order of the groups
    link_labels = dict(sorted(link_labels.items(), key=lambda kv: order[kv[0]]))
    return SceneRobot(robot, world_from_base, link_labels, link_tiles)
