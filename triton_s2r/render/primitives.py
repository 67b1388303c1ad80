"""UV-mapped primitive meshes (trimesh's primitives carry no UVs) and the built-in test scene.

The test scene is a table with a few blocks, a ball and a can: small, deterministic, and generated in
code, so ``triton-s2r demo`` and the tests need no data files.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from triton_s2r.render.camera import Camera
from triton_s2r.render.mesh import Mesh
from triton_s2r.render.scene import FrameState, LabelTable, Scene, SceneObject


def quad(width: float = 1.0, height: float = 1.0) -> Mesh:
    """A quad in the z = 0 plane centred at the origin; u grows along +x, v along +y, corners at 0 and 1."""
    w, h = width / 2, height / 2
    v_pos = np.array([[-w, -h, 0], [w, -h, 0], [w, h, 0], [-w, h, 0]])
    uv = np.array([[0, 0], [1, 0], [1, 1], [0, 1]])
    return Mesh.from_arrays(v_pos, np.array([[0, 1, 2], [0, 2, 3]]), uv, source="quad")

def box(extents: tuple[float, float, float] = (1.0, 1.0, 1.0), padding: float = 0.02) -> Mesh:
    """An axis-aligned box centred at the origin; each face owns one cell of a 3 x 2 UV atlas."""
    half = np.asarray(extents, dtype=np.float64) / 2
    positions, uvs, faces = [], [], []
    # (normal axis, sign): each face is a quad spanned by the two other axes.
    for cell, (axis, sign) in enumerate([(a, s) for a in range(3) for s in (1, -1)]):
        a1, a2 = [k for k in range(3) if k != axis]
        if np.cross(np.eye(3)[a1], np.eye(3)[a2])[axis] * sign < 0:
            a1, a2 = a2, a1  # counter-clockwise seen from outside: (a1 x a2) points along the outward normal
        base = len(positions)
        for s1, s2 in [(-1, -1), (1, -1), (1, 1), (-1, 1)]:
            p = np.zeros(3)
            p[axis], p[a1], p[a2] = sign * half[axis], s1 * half[a1], s2 * half[a2]
            positions.append(p)
            col, row = cell % 3, cell // 3
            uvs.append([(col + padding + (1 - 2 * padding) * (s1 + 1) / 2) / 3,
                        (row + padding + (1 - 2 * padding) * (s2 + 1) / 2) / 2])
        faces += [[base, base + 1, base + 2], [base, base + 2, base + 3]]
    return Mesh.from_arrays(np.array(positions), np.array(faces), np.array(uvs), source="box")

def uv_sphere(radius: float = 0.5, rings: int = 16, segments: int = 32) -> Mesh:
    """A latitude-longitude sphere: u = longitude / 2 pi, v = (latitude + pi / 2) / pi."""
    u, v = np.meshgrid(np.linspace(0, 1, segments + 1), np.linspace(0, 1, rings + 1))
    lon, lat = 2 * math.pi * u, math.pi * (v - 0.5)
    v_pos = radius * np.stack([np.cos(lat) * np.cos(lon), np.cos(lat) * np.sin(lon), np.sin(lat)], -1)
    faces = _grid_faces(rings, segments)
    return Mesh.from_arrays(v_pos.reshape(-1, 3), faces, np.stack([u, v], -1).reshape(-1, 2), source="uv_sphere")

def cylinder(radius: float = 0.5, height: float = 1.0, segments: int = 32) -> Mesh:
    """An open-ended tube along z (the side only): u = angle / 2 pi, v = height fraction."""
    u, v = np.meshgrid(np.linspace(0, 1, segments + 1), np.linspace(0, 1, 2))
    angle = 2 * math.pi * u
    v_pos = np.stack([radius * np.cos(angle), radius * np.sin(angle), height * (v - 0.5)], -1)
    faces = _grid_faces(1, segments)
    return Mesh.from_arrays(v_pos.reshape(-1, 3), faces, np.stack([u, v], -1).reshape(-1, 2), source="cylinder")

def _grid_faces(rows: int, cols: int) -> np.ndarray:
    """Two counter-clockwise triangles per cell of a (rows + 1) x (cols + 1) vertex grid."""
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    i0 = (r * (cols + 1) + c).ravel()
    i1, i2, i3 = i0 + 1, i0 + cols + 2, i0 + cols + 1
    return np.concatenate([np.stack([i0, i1, i2], -1), np.stack([i0, i2, i3], -1)])

def _translation(x: float, y: float, z: float, yaw_deg: float = 0.0) -> np.ndarray:
    c, s = math.cos(math.radians(yaw_deg)), math.sin(math.radians(yaw_deg))
    return np.array([[c, -s, 0, x], [s, c, 0, y], [0, 0, 1, z], [0, 0, 0, 1]], dtype=np.float32)

def builtin_scene() -> Scene:
    """The built-in tabletop test scene: a table top, three blocks, a ball and a can (5 labels).

    World frame: z up, table top surface at z = 0, metres. Meshes are baked at their rest poses, so
    ``FrameState.static`` gives the default arrangement.
    """
    labels = LabelTable(("table", "block", "ball", "can"), (255, 50, 100, 150), void_value=0)
    objects = [
        SceneObject("table", 1, box((1.2, 0.8, 0.04)).transformed(_translation(0, 0, -0.02))),
        SceneObject("block_a", 2, box((0.08, 0.08, 0.08)).transformed(_translation(-0.2, 0.05, 0.04, 20))),
        SceneObject("block_b", 2, box((0.08, 0.08, 0.08)).transformed(_translation(0.05, -0.15, 0.04, -35))),
        SceneObject("block_c", 2, box((0.08, 0.08, 0.08)).transformed(_translation(-0.2, 0.05, 0.12, 60))),
        SceneObject("ball", 3, uv_sphere(0.06).transformed(_translation(0.2, 0.12, 0.06))),
        SceneObject("can", 4, cylinder(0.035, 0.12).transformed(_translation(0.25, -0.1, 0.06))),
    ]
    return Scene(tuple(objects), labels)


def orbit_cameras(num_frames: int, *, width: int, height: int, radius: float = 1.1, elevation_deg: float = 35.0,
                  fov_y_deg: float = 45.0) -> Camera:
    """Cameras on a circle around the table centre, looking at it, one per frame (first at azimuth -90 deg)."""
    azimuth = torch.linspace(-math.pi / 2, -math.pi / 2 + 2 * math.pi, num_frames + 1)[:-1]
    elev = math.radians(elevation_deg)
    eye = torch.stack([radius * math.cos(elev) * torch.cos(azimuth), radius * math.cos(elev) * torch.sin(azimuth),
                       torch.full_like(azimuth, radius * math.sin(elev))], -1)
    return Camera.look_at(eye, torch.tensor([0.0, 0.0, 0.05]), width=width, height=height, fov_y_deg=fov_y_deg)

def builtin_frames(num_frames: int, *, width: int, height: int) -> tuple[Scene, FrameState]:
    """The test scene seen from ``num_frames`` orbiting cameras, objects at rest."""
    scene = builtin_scene()
    return scene, FrameState.static(scene, orbit_cameras(num_frames, width=width, height=height))
