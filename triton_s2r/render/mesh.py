"""Triangle meshes with texture coordinates, loaded with trimesh.

Naming follows nvdiffrec: ``v_pos`` vertex positions, ``v_uv`` texture coordinates, ``t_pos_idx`` and
``t_uv_idx`` the per-triangle indices into them. Meshes are converted to tensors right after loading.
"""

from __future__ import annotations

import hashlib
import math
import os
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import trimesh
from torch import Tensor

from triton_s2r.utils.cache import CACHE_ENV, cache_dir
from triton_s2r.utils.files import atomic_savez
from triton_s2r.utils.optional import require

#: Fraction of triangles whose UV area may be zero before the UVs count as unusable. Palette UVs
#: (every vertex at one texel, as in pybullet_data's Panda) fail this test.
MAX_DEGENERATE_UV_FRACTION = 0.5
#: How far UVs may leave [0, 1] (rounding in exporters) before they count as unusable.
UV_RANGE_TOLERANCE = 1e-3
#: Suffix of the cached xatlas unwraps in ``<cache_dir()>/unwrap/<sha256 of the mesh file>.xatlas.npz``.
UNWRAP_CACHE_SUFFIX = ".xatlas.npz"


class MeshError(ValueError):
    """A mesh file cannot be used; the message names the file and the fix."""


@dataclass(frozen=True)
class Mesh:
    """A triangle mesh with per-corner texture coordinates.

    Attributes:
        v_pos: (V, 3) float32 vertex positions in the object's frame (metres by convention).
        t_pos_idx: (F, 3) int64 vertex indices per triangle, counter-clockwise seen from outside.
        v_uv: (T, 2) float32 texture coordinates, u and v in [0, 1].
        t_uv_idx: (F, 3) int64 indices into ``v_uv`` per triangle corner.
        source: file the mesh came from, or a description for generated meshes.
    """

    v_pos: Tensor
    t_pos_idx: Tensor
    v_uv: Tensor
    t_uv_idx: Tensor
    source: str = "<generated>"

    def __post_init__(self) -> None:
        if self.v_pos.ndim != 2 or self.v_pos.shape[1] != 3:
            raise MeshError(f"{self.source}: v_pos must be (V, 3), got {tuple(self.v_pos.shape)}")
        if self.t_pos_idx.shape != self.t_uv_idx.shape or self.t_pos_idx.shape[1:] != (3,):
            raise MeshError(f"{self.source}: t_pos_idx and t_uv_idx must both be (F, 3)")
        if self.v_uv.ndim != 2 or self.v_uv.shape[1] != 2:
            raise MeshError(f"{self.source}: v_uv must be (T, 2), got {tuple(self.v_uv.shape)}")
        _check_positions(self.v_pos, self.source)

    @property
    def num_triangles(self) -> int:
        """F, the number of triangles."""
        return self.t_pos_idx.shape[0]

    def transformed(self, matrix: np.ndarray | Tensor) -> Mesh:
        """This mesh with positions mapped by a 4x4 affine ``matrix`` (e.g. to bake a scale)."""
        m = torch.as_tensor(np.asarray(matrix), dtype=torch.float32)
        v = self.v_pos @ m[:3, :3].T + m[:3, 3]
        return Mesh(v, self.t_pos_idx, self.v_uv, self.t_uv_idx, self.source)

    def in_uv_tile(self, index: int, count: int) -> Mesh:
        """This mesh with its UVs shrunk into tile ``index`` of ``count`` square tiles of the UV square.

        For meshes that share one label, and so one learned texture: each gets its own region of it. The
        tiles form a ceil(sqrt(count))-wide grid, row-major in u; each keeps a margin of 1/32 of its side.
        """
        if not 0 <= index < count:
            raise ValueError(f"tile index {index} outside 0..{count - 1}")
        side = math.ceil(math.sqrt(count))
        size, margin = 1.0 / side, 1.0 / side / 32
        corner = torch.tensor([index // side, index % side], dtype=torch.float32) * size + margin
        return Mesh(self.v_pos, self.t_pos_idx, corner + self.v_uv * (size - 2 * margin), self.t_uv_idx, self.source)

    @classmethod
    def from_arrays(
        cls, v_pos: np.ndarray, faces: np.ndarray, uv: np.ndarray, source: str = "<generated>"
    ) -> Mesh:
        """A mesh whose UVs are per vertex (``uv[i]`` belongs to ``v_pos[i]``), as trimesh stores them."""
        faces_t = torch.as_tensor(np.asarray(faces, dtype=np.int64))
        return cls(
            torch.as_tensor(np.asarray(v_pos, dtype=np.float32)),
            faces_t,
            torch.as_tensor(np.asarray(uv, dtype=np.float32)),
            faces_t.clone(),
            source,
        )


def _check_positions(v_pos: Tensor, source: str) -> None:
    """Raise if any of the (V, 3) vertex positions is NaN or infinite (a renderer would fail later, naming no file)."""
    bad = int((~torch.isfinite(v_pos)).any(1).sum())
    if bad:
        raise MeshError(f"{source}: {bad} of {v_pos.shape[0]} vertex positions are NaN or infinite; fix or re-export "
                        "the mesh (e.g. remove degenerate vertices in your modelling tool)")


def uv_problem(mesh: Mesh) -> str | None:
    """Why the mesh's UVs cannot carry a learned texture, or None if they can.

    Checks that UVs are finite, lie in [0, 1], and that at most ``MAX_DEGENERATE_UV_FRACTION`` of the
    triangles have (numerically) zero area in UV space.
    """
    uv = mesh.v_uv
    if uv.shape[0] == 0 or mesh.num_triangles == 0:
        return "it has no triangles or no texture coordinates"
    if not torch.isfinite(uv).all():
        return "its texture coordinates contain NaN or infinity"
    lo, hi = float(uv.min()), float(uv.max())
    if lo < -UV_RANGE_TOLERANCE or hi > 1 + UV_RANGE_TOLERANCE:
        return f"its texture coordinates span [{lo:.3f}, {hi:.3f}], outside [0, 1] (tiled or wrapped UVs)"
    corners = uv[mesh.t_uv_idx]  # (F, 3, 2)
    e1, e2 = corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0]
    area = 0.5 * (e1[:, 0] * e2[:, 1] - e1[:, 1] * e2[:, 0]).abs()
    degenerate = float((area < 1e-10).float().mean())
    if degenerate > MAX_DEGENERATE_UV_FRACTION:
        return f"{degenerate:.0%} of its triangles have zero area in UV space (palette or missing UVs)"
    return None


def load_mesh(path: str | os.PathLike, *, unwrap: bool = False) -> Mesh:
    """Load an OBJ, GLB/GLTF or PLY file (anything trimesh reads) as one mesh with UVs.

    Scenes inside the file are flattened with their node transforms. Vertex order is preserved
    (``process=False``) so that cached unwraps stay valid.

    Args:
        path: mesh file.
        unwrap: if the file has no usable UVs, compute them with xatlas (extra ``unwrap``) and cache the
            result in the cache folder (``utils.cache.cache_dir``, keyed by the file's content hash; nothing
            is written next to the mesh); otherwise such a file is an error.

    Raises:
        FileNotFoundError: the file does not exist.
        MeshError: the file cannot be read, has no triangles, has NaN or infinite vertex positions, or has no
            usable UVs (NaN, infinite, outside [0, 1] or collapsed) and ``unwrap`` is off.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"mesh file not found: {path}")
    try:
        loaded = trimesh.load(path, force="mesh", process=False)
    except Exception as exc:  # trimesh raises many types for malformed files
        raise MeshError(f"{path}: trimesh could not read this mesh ({type(exc).__name__}: {exc})") from exc
    if not isinstance(loaded, trimesh.Trimesh) or len(loaded.faces) == 0:
        raise MeshError(f"{path}: no triangles found; export the object as a triangle mesh")
    vertices, faces = np.asarray(loaded.vertices), np.asarray(loaded.faces)
    _check_positions(torch.as_tensor(vertices), str(path))  # before any unwrap: xatlas must not see NaN
    uv = getattr(loaded.visual, "uv", None)
    if uv is not None and len(uv) == len(vertices):
        # trimesh stores the UV "v" axis bottom-up (OBJ convention); we keep it as the file has it.
        mesh = Mesh.from_arrays(vertices, faces, uv, source=str(path))
        problem = uv_problem(mesh)
    else:
        mesh, problem = None, "it has no texture coordinates"
    if mesh is not None and problem is None:
        return mesh
    if not unwrap:
        raise MeshError(
            f"{path}: this mesh has no usable UVs: {problem}. Unwrap it in your modelling tool, or pass "
            "unwrap=True (scene file: `unwrap: true`) to compute UVs with xatlas (pip install triton_s2r[unwrap])."
        )
    return _unwrap_cached(path, vertices, faces)


def _unwrap_cached(path: Path, vertices: np.ndarray, faces: np.ndarray) -> Mesh:
    """xatlas-unwrap a mesh once; later loads of the same file content read the cached result.

    The cache entry is ``<cache_dir()>/unwrap/<sha256 of the file>.xatlas.npz``: keyed by content, so a
    changed file is unwrapped again and identical copies share one entry.
    """
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    cache = cache_dir() / "unwrap" / f"{digest}{UNWRAP_CACHE_SUFFIX}"
    if cache.is_file():
        with np.load(cache) as data:
            if str(data["sha256"]) == digest and bool((data["vmapping"] < len(vertices)).all()):
                return Mesh.from_arrays(vertices[data["vmapping"]], data["indices"], data["uvs"], str(path))
    xatlas = require("xatlas", extra="unwrap")
    vmapping, indices, uvs = xatlas.parametrize(vertices.astype(np.float32), faces.astype(np.uint32))
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        atomic_savez(cache, sha256=digest, vmapping=vmapping, indices=indices, uvs=uvs)
    except OSError as exc:  # a read-only home, say: the unwrap is still right, only slower next time
        warnings.warn(f"{path}: could not cache its xatlas unwrap in {cache.parent} ({exc}); set {CACHE_ENV} to a "
                      "writable folder to avoid unwrapping again", stacklevel=3)
    return Mesh.from_arrays(vertices[vmapping], indices, uvs, str(path))
