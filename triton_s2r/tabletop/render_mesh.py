"""Meshes as the path tracer needs them: one index list, shading normals smoothed within a crease angle."""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass

import numpy as np

from triton_s2r.render.mesh import Mesh

#: Dihedral angle (degrees) above which an edge stays sharp; below it, normals are smoothed across it.
CREASE_ANGLE_DEG = 40.0


@dataclass(frozen=True)
class RenderMesh:
    """A mesh with one index list (corners split where positions, UVs or normals differ), object frame.

    Attributes:
        positions: (V, 3) float64 vertex positions.
        normals: (V, 3) float64 unit shading normals (smooth within ``CREASE_ANGLE_DEG``, sharp across).
        texcoords: (V, 2) float32 in Mitsuba's convention ``(u, 1 - v)``: its ``bitmap`` reads row 0 at
            texcoord v = 0, while our UVs (and OBJ) put v = 0 at the bottom row.
        faces: (F, 3) uint32 vertex indices.
    """

    positions: np.ndarray
    normals: np.ndarray
    texcoords: np.ndarray
    faces: np.ndarray


_RENDER_MESHES: dict[int, tuple[weakref.ref, RenderMesh]] = {}


def render_mesh(mesh: Mesh, crease_angle_deg: float = CREASE_ANGLE_DEG) -> RenderMesh:
    """Convert a ``Mesh`` (separate position and UV indices) into a single-index mesh with normals.

    Results are cached per ``Mesh`` object, so a robot's 100k triangles are split once per process.
    """
    key = id(mesh)
    cached = _RENDER_MESHES.get(key)
    if cached is not None and cached[0]() is mesh:
        return cached[1]
    pos = mesh.v_pos.detach().cpu().numpy().astype(np.float64)
    uv = mesh.v_uv.detach().cpu().numpy().astype(np.float32)
    t_pos, t_uv = mesh.t_pos_idx.cpu().numpy(), mesh.t_uv_idx.cpu().numpy()
    corner_normals = _corner_normals(pos, t_pos, math.cos(math.radians(crease_angle_deg)))
    # A vertex of the output is a distinct (position, uv, normal) triple; normals compared at 1e-4.
    keys = np.concatenate([t_pos.reshape(-1, 1), t_uv.reshape(-1, 1),
                           np.round(corner_normals * 1e4).astype(np.int64)], axis=1)
    _, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    result = RenderMesh(
        positions=pos[t_pos.reshape(-1)[first]],
        normals=corner_normals[first],
        texcoords=np.stack([uv[t_uv.reshape(-1)[first], 0], 1 - uv[t_uv.reshape(-1)[first], 1]], -1),
        faces=inverse.reshape(-1, 3).astype(np.uint32),
    )
    _RENDER_MESHES[key] = (weakref.ref(mesh, lambda _, k=key: _RENDER_MESHES.pop(k, None)), result)
    return result


def _corner_normals(pos: np.ndarray, faces: np.ndarray, cos_crease: float) -> np.ndarray:
    """(3F, 3) unit normal per triangle corner, smoothed within the crease angle.

    The area-weighted mean of the normals of the triangles that share the corner's vertex and lie within the crease
    angle of the corner's own triangle.
    """
    face_n = np.cross(pos[faces[:, 1]] - pos[faces[:, 0]], pos[faces[:, 2]] - pos[faces[:, 0]])  # 2 x area
    unit = face_n / np.maximum(np.linalg.norm(face_n, axis=1, keepdims=True), 1e-20)
    corner_vertex = faces.reshape(-1)
    corner_face = np.repeat(np.arange(len(faces)), 3)
    order = np.argsort(corner_vertex, kind="stable")
    sorted_vertex = corner_vertex[order]
    starts = np.flatnonzero(np.r_[True, sorted_vertex[1:] != sorted_vertex[:-1]])
    sizes = np.diff(np.r_[starts, len(order)])
    # All ordered pairs of corners around each vertex: (a, b) with a, b positions in the sorted order.
    group = np.repeat(np.arange(len(starts)), sizes)
    count = sizes[group]
    a = np.repeat(np.arange(len(order)), count)
    b = starts[group][a] + (np.arange(count.sum()) - np.repeat(np.cumsum(count) - count, count))
    fa, fb = corner_face[order[a]], corner_face[order[b]]
    keep = np.einsum("ij,ij->i", unit[fa], unit[fb]) > cos_crease
    summed = np.stack([np.bincount(a, weights=face_n[fb, k] * keep, minlength=len(order)) for k in range(3)], -1)
    # Corners of degenerate triangles (sphere poles) match nothing: give them the plain vertex average.
    plain = np.stack([np.bincount(a, weights=face_n[fb, k], minlength=len(order)) for k in range(3)], -1)
    norm = np.linalg.norm(summed, axis=1, keepdims=True)
    summed = np.where(norm > 1e-20, summed, plain)
    norm = np.linalg.norm(summed, axis=1, keepdims=True)
    summed = np.where(norm > 1e-20, summed / np.maximum(norm, 1e-20), np.array([0.0, 0.0, 1.0]))
    out = np.empty_like(summed)
    out[order] = summed
    return out
