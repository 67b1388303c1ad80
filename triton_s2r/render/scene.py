"""Scene model: rigid objects with UV-mapped meshes, a label table, and per-frame states.

A scene is a list of rigid objects (table, blocks, each robot link, ...). Each object carries a label;
several objects may share one (all links of the robot, say). A ``FrameState`` poses every object and
the camera for a batch of frames, so articulated robots are just objects whose poses come from
forward kinematics.
"""

from __future__ import annotations

import itertools
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import torch
import yaml
from torch import Tensor

from triton_s2r.render.camera import Camera
from triton_s2r.render.mesh import Mesh, load_mesh
from triton_s2r.render.urdf import SceneRobot, scene_robot
from triton_s2r.utils.optional import require


@dataclass(frozen=True)
class LabelTable:
    """Names and UVL file values of the labels; id 0 is always "void".

    Ids are positions: label id ``i >= 1`` is ``names[i - 1]``. In UVL files a label is stored as
    blue = value / 255 (reference TRITON format), with one value per label.

    Attributes:
        names: names of labels 1..K.
        values: UVL file values (0..255) of labels 1..K, all distinct.
        void_value: value written for void pixels, distinct from ``values``; None means the files
            have no void pixels (as in the reference datasets, where every pixel hits a surface).
    """

    names: tuple[str, ...]
    values: tuple[int, ...]
    void_value: int | None = 0

    def __post_init__(self) -> None:
        if len(self.names) != len(self.values):
            raise ValueError(f"label table: {len(self.names)} names but {len(self.values)} values")
        if len(set(self.names)) != len(self.names) or "void" in self.names:
            raise ValueError(f"label table: names must be distinct and not 'void', got {self.names}")
        everything = list(self.values) + ([] if self.void_value is None else [self.void_value])
        if len(set(everything)) != len(everything) or not all(0 <= v <= 255 for v in everything):
            raise ValueError(
                f"label table: values must be distinct integers in 0..255 (void included), got "
                f"values={self.values}, void_value={self.void_value}"
            )

    @classmethod
    def evenly_spaced(cls, names: list[str] | tuple[str, ...]) -> LabelTable:
        """Labels with values spread over 1..255 (void = 0), far apart so they survive half floats."""
        n = len(names)
        values = tuple(round(255 * (i + 1) / n) for i in range(n))
        return cls(tuple(names), values, 0)

    @classmethod
    def filling_values(cls, names: list[str], values: list[int | None], void_value: int | None) -> LabelTable:
        """Labels where each None value gets the free value farthest from those taken (robust to half floats)."""
        used = {v for v in [*values, void_value] if v is not None}
        filled = []
        for value in values:
            if value is None:
                free = [x for x in range(1, 256) if x not in used]
                if not free:
                    raise ValueError(f"label table: no free value in 1..255 for {len(names)} labels")
                value = max(free, key=lambda x: min((abs(x - u) for u in used), default=x))
                used.add(value)
            filled.append(value)
        return cls(tuple(names), tuple(filled), void_value)

    @property
    def num_labels(self) -> int:
        """K, the number of labels excluding void."""
        return len(self.names)

    def id_of(self, name: str) -> int:
        """Label id of ``name``."""
        try:
            return self.names.index(name) + 1
        except ValueError:
            raise KeyError(f"label {name!r} is not in the label table {list(self.names)}") from None

    @classmethod
    def from_dict(cls, spec) -> LabelTable:
        """The inverse of ``to_dict`` (any mapping with ``names``, ``values`` and optionally ``void_value``)."""
        return cls(tuple(spec["names"]), tuple(spec["values"]), spec.get("void_value", 0))

    def to_dict(self) -> dict:
        """The table as plain data, the inverse of ``from_dict``."""
        return {"names": list(self.names), "values": list(self.values), "void_value": self.void_value}


@dataclass(frozen=True)
class SceneObject:
    """One rigid object: a mesh in its own frame and the label id its surface shows."""

    name: str
    label: int
    mesh: Mesh


@dataclass(frozen=True)
class Scene:
    """Rigid objects plus their label table, and the robot (URDF) whose links some of them are, if any.

    The merged arrays (all objects' triangles in one list, object after object) are what the render
    backends consume; a triangle's index in them is the ``face_id`` a G-buffer reports.
    """

    objects: tuple[SceneObject, ...]
    labels: LabelTable
    robot: SceneRobot | None = field(default=None, repr=False, compare=False)
    _merged: dict = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.objects:
            raise ValueError("a scene needs at least one object")
        for obj in self.objects:
            if not 1 <= obj.label <= self.labels.num_labels:
                raise ValueError(
                    f"object {obj.name!r} has label id {obj.label}, "
                    f"outside the label table's 1..{self.labels.num_labels}"
                )
        overlapping: dict[int, set[str]] = {}  # label -> objects whose UVs overlap another object's of it
        uv_boxes = [(obj.mesh.v_uv.min(0).values, obj.mesh.v_uv.max(0).values) for obj in self.objects]
        for (a, box_a), (b, box_b) in itertools.combinations(zip(self.objects, uv_boxes, strict=True), 2):
            if a.label == b.label and _boxes_overlap(box_a, box_b) and not _same_uv_layout(a.mesh, b.mesh):
                overlapping.setdefault(a.label, set()).update((a.name, b.name))
        for label, names in overlapping.items():
            warnings.warn(
                f"objects {sorted(names)} share label {self.labels.names[label - 1]!r} and overlap in UV space, so "
                "one texel of that label's texture stands for several surfaces and the surface consistency loss "
                "compares them; give each its own UV region (scene file: uv_tile: [i, n]; Python: "
                "Mesh.in_uv_tile) or its own label", stacklevel=2)

    @property
    def num_objects(self) -> int:
        """The number of objects."""
        return len(self.objects)

    @property
    def num_triangles(self) -> int:
        """Triangles of all objects together."""
        return sum(o.mesh.num_triangles for o in self.objects)

    def merged(self) -> dict[str, Tensor]:
        """All objects in one set of arrays (computed once).

        Returns:
            Dict with ``v_pos`` (V, 3) float32 object-frame positions, ``v_object`` (V,) int64 owning
            object, ``t_pos_idx`` (F, 3) int64, ``v_uv`` (T, 2) float32, ``t_uv_idx`` (F, 3) int64,
            ``t_label`` (F,) int64 label ids, ``t_object`` (F,) int64 owning object, and
            ``face_offset`` (num_objects + 1,) int64 first triangle of each object.
        """
        if not self._merged:
            v_off = uv_off = 0
            parts: dict[str, list[Tensor]] = {k: [] for k in ("v_pos", "v_object", "t_pos_idx", "v_uv", "t_uv_idx")}
            t_label, t_object, face_offset = [], [], [0]
            for i, obj in enumerate(self.objects):
                m = obj.mesh
                parts["v_pos"].append(m.v_pos)
                parts["v_object"].append(torch.full((m.v_pos.shape[0],), i, dtype=torch.int64))
                parts["t_pos_idx"].append(m.t_pos_idx + v_off)
                parts["v_uv"].append(m.v_uv)
                parts["t_uv_idx"].append(m.t_uv_idx + uv_off)
                t_label.append(torch.full((m.num_triangles,), obj.label, dtype=torch.int64))
                t_object.append(torch.full((m.num_triangles,), i, dtype=torch.int64))
                face_offset.append(face_offset[-1] + m.num_triangles)
                v_off += m.v_pos.shape[0]
                uv_off += m.v_uv.shape[0]
            merged = {k: torch.cat(v) for k, v in parts.items()}
            merged.update(t_label=torch.cat(t_label), t_object=torch.cat(t_object),
                          face_offset=torch.tensor(face_offset))
            # One dict update (atomic under the GIL): renderer threads that call this at the same time never
            # see a half-filled cache.
            self._merged.update(merged)
        return self._merged

    def interchangeable_labels(self) -> list[tuple[int, ...]]:
        """Groups of label ids whose objects are copies of one shape: unpaired frames cannot tell them apart.

        A label's shape is the meshes of its objects (positions and triangles in their own frames, compared
        exactly); labels of equal shape form a group. Which of them carries which real appearance is then not in
        unpaired data (docs/evaluation.md, "What unpaired training cannot know").

        Returns:
            The groups of two or more label ids, each ascending, in order of their first id.
        """
        shapes: dict[int, list[tuple[bytes, bytes]]] = {}
        for obj in self.objects:
            shapes.setdefault(obj.label, []).append((obj.mesh.v_pos.numpy().tobytes(),
                                                     obj.mesh.t_pos_idx.numpy().tobytes()))
        groups: dict[tuple[tuple[bytes, bytes], ...], list[int]] = {}
        for label in sorted(shapes):
            groups.setdefault(tuple(sorted(shapes[label])), []).append(label)
        return [tuple(g) for g in groups.values() if len(g) > 1]


@dataclass(frozen=True)
class FrameState:
    """Poses of every scene object and the camera, for a batch of B frames.

    Attributes:
        object_poses: (B, N, 4, 4) float32 ``world_from_object`` transforms, N = scene.num_objects,
            in the order of ``scene.objects``. Rigid (rotation + translation) plus optional scale.
        camera: B cameras (see ``Camera`` for the convention).
    """

    object_poses: Tensor
    camera: Camera

    def __post_init__(self) -> None:
        p = self.object_poses
        if p.ndim != 4 or p.shape[2:] != (4, 4):
            raise ValueError(f"object_poses must be (B, N, 4, 4), got {tuple(p.shape)}")
        if p.shape[0] != self.camera.batch_size:
            raise ValueError(f"{p.shape[0]} object-pose frames but {self.camera.batch_size} cameras")
        if not torch.isfinite(p).all():
            raise ValueError("object_poses contain NaN or infinity")

    @property
    def batch_size(self) -> int:
        """B, the number of frames."""
        return self.object_poses.shape[0]

    @classmethod
    def static(cls, scene: Scene, camera: Camera) -> FrameState:
        """Every object at its mesh frame (identity pose), for each camera of the batch."""
        poses = torch.eye(4).expand(camera.batch_size, scene.num_objects, 4, 4).contiguous()
        return cls(poses, camera)

    def select(self, index: Tensor | list[int] | slice) -> FrameState:
        """The frames at ``index`` of the batch."""
        return FrameState(self.object_poses[index], self.camera.select(index))

    def to(self, device: torch.device | str) -> FrameState:
        """These states with their tensors on ``device``."""
        return FrameState(self.object_poses.to(device), self.camera.to(device))


def _boxes_overlap(a: tuple[Tensor, Tensor], b: tuple[Tensor, Tensor]) -> bool:
    """Whether two UV bounding boxes, each (lower (2,), upper (2,)), overlap (a cheap, conservative test)."""
    (a_lo, a_hi), (b_lo, b_hi) = a, b
    return bool(((a_lo < b_hi) & (b_lo < a_hi)).all())


def _same_uv_layout(a: Mesh, b: Mesh) -> bool:
    """Copies of one object (identical UVs): sharing texels is then meant, e.g. three identical blocks."""
    return torch.equal(a.v_uv, b.v_uv) and torch.equal(a.t_uv_idx, b.t_uv_idx)


def load_scene(path: str | os.PathLike) -> Scene:
    """Load a scene file (YAML) listing labels and objects.

    Format::

        labels:                      # ids 1..K in this order; void (id 0) is implicit
          - {name: table, value: 255}
          - {name: block, value: 50}
        void_value: 0                # optional, default 0; null if the UVL files have no void pixels
        objects:
          - {name: table, label: table, mesh: meshes/table.obj}
          - {name: block_a, label: block, mesh: meshes/block.glb, unwrap: true, uv_tile: [0, 2]}
          - {name: block_b, label: block, mesh: meshes/block.glb, unwrap: true, uv_tile: [1, 2]}

    Mesh paths are relative to the scene file and must stay inside its folder (no ``..`` leading out of
    it: a scene file from elsewhere must not read arbitrary files); an absolute path is allowed, as an
    explicit choice. ``unwrap: true`` computes UVs with xatlas when the
    mesh has none (see ``load_mesh``). ``uv_tile: [i, n]`` shrinks the mesh's UVs into tile i of n
    (``Mesh.in_uv_tile``), so that objects sharing a label, and so a texture, do not overlap in it.

    A ``robot:`` entry adds the links of a URDF robot as objects (after ``objects``, in URDF order, named
    after the links; ``render.urdf.scene_robot``)::

        robot:
          urdf: robot/xarm6.urdf       # or pybullet_data://xarm/xarm6_robot.urdf (the installed package)
          base: {xyz: [-0.4, 0, 0], rpy: [0, 0, 0]}      # world_from_base, optional
          labels: {robot_base: [link_base, link1], robot_arm: [link2, link3, link4, link5, link6]}

    Without ``labels`` each link gets its own label, named after it; links sharing a label get a UV tile
    each. Labels listed without a ``value``, and robot labels missing from ``labels``, get free values.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"scene file not found: {path}")
    try:
        spec = yaml.safe_load(path.read_text())
        robot_entry = spec.get("robot")
        if robot_entry is not None and not isinstance(robot_entry, dict):
            raise TypeError(f"`robot` must be a mapping with urdf, labels and base, got {robot_entry!r}")
    except (yaml.YAMLError, AttributeError, TypeError) as exc:
        raise ValueError(f"{path}: not a valid scene file ({exc}); see triton_s2r.render.scene.load_scene") from exc
    robot = None
    if robot_entry is not None:
        robot = scene_robot(robot_entry, _file_path(path, "robot", "urdf", robot_entry.get("urdf")), str(path))
    try:
        names = [str(entry["name"]) for entry in spec["labels"]]
        values = [None if entry.get("value") is None else int(entry["value"]) for entry in spec["labels"]]
        robot_labels = [] if robot is None else [n for n in robot.label_names if n not in names]
        labels = LabelTable.filling_values(names + robot_labels, values + [None] * len(robot_labels),
                                           spec.get("void_value", 0))
        entries = spec.get("objects", []) if robot is not None else spec["objects"]
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{path}: not a valid scene file ({exc}); see triton_s2r.render.scene.load_scene") from exc
    objects = []
    for entry in entries:
        if not isinstance(entry, dict):
            raise ValueError(f"{path}: each object must be a mapping with name, label and mesh, got {entry!r}")
        try:
            label = labels.id_of(str(entry["label"]))
        except KeyError as exc:
            raise ValueError(f"{path}: object {entry.get('name')!r}: {exc.args[0]}") from None
        mesh_file = _file_path(path, f"object {entry.get('name')!r}", "mesh", entry.get("mesh"))
        mesh = load_mesh(mesh_file, unwrap=bool(entry.get("unwrap", False)))
        if "uv_tile" in entry:  # [index, count]: this object's region of its label's texture
            try:
                mesh = mesh.in_uv_tile(*(int(k) for k in entry["uv_tile"]))
            except (TypeError, ValueError) as exc:
                raise ValueError(f"{path}: object {entry.get('name')!r}: uv_tile must be [index, count] with "
                                 f"0 <= index < count ({exc})") from None
        objects.append(SceneObject(str(entry["name"]), label, mesh))
    if robot is not None:
        clash = sorted({o.name for o in objects} & set(robot.link_labels))
        if clash:
            raise ValueError(f"{path}: objects {clash} have the names of robot links; rename them")
        objects += [SceneObject(link, labels.id_of(robot.link_labels[link]), mesh)
                    for link, mesh in robot.link_meshes().items()]
    return Scene(tuple(objects), labels, robot)


def _file_path(scene_file: Path, owner: str, key: str, value: object) -> Path:
    """The file of a scene-file entry's ``key`` (``mesh``, ``urdf``): relative paths must stay in the file's folder.

    The check is on the written path (``..`` components), not on resolved symlinks: a link the user placed
    in the folder is as explicit a choice as an absolute path. ``pybullet_data://REST`` names a file of the
    installed ``pybullet_data`` package (the example robots).
    """
    if not isinstance(value, str) or not value:
        raise ValueError(f"{scene_file}: {owner}: `{key}` must be a file path, got {value!r}")
    if value.startswith("pybullet_data://"):
        pybullet_data = require("pybullet_data", extra="robot", package="pybullet")
        return Path(pybullet_data.getDataPath()) / value[len("pybullet_data://"):]
    if os.path.isabs(value):
        return Path(value)
    parts = Path(os.path.normpath(value)).parts
    if parts and parts[0] == "..":
        raise ValueError(
            f"{scene_file}: {owner}: {key} path {value!r} leaves the scene file's folder; relative {key} paths "
            "must stay inside it: move the file next to the scene file (e.g. meshes/), or write an absolute path "
            "if you mean to use a file elsewhere"
        )
    return scene_file.parent / value
