"""CPU render backend: Embree ray casting (embreex), one ray per pixel centre.

Exact: each pixel gets the nearest triangle on its centre ray, the hit's barycentric coordinates, and
from them the interpolated UV. Objects are rigid, so each object's BVH is built once in its own frame
and rays are moved into that frame per frame instead of rebuilding; rays are cast only inside the
object's projected bounding box. We call embreex directly rather than through trimesh's
``RayMeshIntersector`` because embreex returns the barycentrics and ray distance we need (trimesh
recomputes them from hit locations) -- same library, fewer passes.
"""

from __future__ import annotations

import math
import os
import weakref
from concurrent.futures import ThreadPoolExecutor

# Not `from embreex import rtcore_scene`: the type checker would read it through embreex.__getattr__ (a str).
import embreex.rtcore_scene as rtcore_scene
import numpy as np
import torch
from embreex.mesh_construction import TriangleMesh

from triton_s2r.render.camera import Camera
from triton_s2r.render.gbuffer import VOID, GBuffer
from triton_s2r.render.mesh import Mesh
from triton_s2r.render.scene import FrameState, Scene


class EmbreeRasterizer:
    """Renders G-buffers on the CPU with Embree; see ``triton_s2r.render.rasterizer`` for the contract."""

    name = "embree"
    device = torch.device("cpu")

    def __init__(self) -> None:
        # BVH per mesh, kept as long as the mesh lives.
        self._bvh: weakref.WeakKeyDictionary[Mesh, rtcore_scene.EmbreeScene] = weakref.WeakKeyDictionary()

    def _scene_of(self, mesh: Mesh) -> rtcore_scene.EmbreeScene:
        if mesh not in self._bvh:
            bvh = rtcore_scene.EmbreeScene()
            TriangleMesh(bvh, mesh.v_pos.numpy().astype(np.float32), mesh.t_pos_idx.numpy().astype(np.int32))
            self._bvh[mesh] = bvh
        return self._bvh[mesh]

    def render(self, scene: Scene, state: FrameState, supersample: int = 1) -> GBuffer:
        """Ray-cast every frame on the CPU, frames in parallel threads; see ``UVLRasterizer.render``."""
        camera = state.camera.supersampled(supersample)
        h, w = camera.height, camera.width
        hits = {
            "depth": np.full((state.batch_size, h, w), np.inf, dtype=np.float32),
            "face": np.full((state.batch_size, h, w), -1, dtype=np.int64),
            "bary": np.zeros((state.batch_size, h, w, 2), dtype=np.float32),
        }
        for obj in scene.objects:  # build BVHs up front, not inside worker threads
            self._scene_of(obj.mesh)
        frame_args = (scene, camera, state.object_poses.to(torch.float64).numpy(), hits)
        # Embree releases the GIL while tracing, so frames run in parallel threads.
        workers = min(state.batch_size, os.cpu_count() or 1)
        if workers > 1:
            with ThreadPoolExecutor(workers) as pool:
                list(pool.map(lambda b: self._render_frame(b, *frame_args), range(state.batch_size)))
        else:
            for b in range(state.batch_size):
                self._render_frame(b, *frame_args)
        hits = {k: torch.from_numpy(v) for k, v in hits.items()}
        return _gbuffer_from_hits(scene.merged(), hits["face"], hits["bary"], hits["depth"])

    def _render_frame(self, b: int, scene: Scene, camera: Camera, poses: np.ndarray, hits: dict) -> None:
        """Trace frame ``b`` into ``hits[...][b]``: nearest depth, triangle id and barycentrics."""
        h, w, near = camera.height, camera.width, camera.near
        depth, face, bary = hits["depth"][b], hits["face"][b], hits["bary"][b]
        directions = camera.select([b]).ray_directions()[0].double().numpy()  # (H, W, 3), camera z = 1
        origin = camera.world_from_camera[b, :3, 3].double().numpy()
        camera_from_world = camera.camera_from_world[b].double().numpy()
        intrinsics = camera.intrinsics[b].double().numpy()
        face_offset = scene.merged()["face_offset"].numpy()
        for i, obj in enumerate(scene.objects):
            window = _screen_window(obj.mesh, poses[b, i], camera_from_world, intrinsics, h, w, near)
            if window is None:
                continue
            rows, cols = slice(window[0], window[1]), slice(window[2], window[3])
            d = directions[rows, cols].reshape(-1, 3)
            object_from_world = np.linalg.inv(poses[b, i])
            lin, trans = object_from_world[:3, :3], object_from_world[:3, 3]
            # Rays start on the near plane (the rasterizer's clipping); directions are not renormalised,
            # so t stays the world ray parameter, i.e. depth - near.
            o_local = (origin + near * d) @ lin.T + trans
            d_local = d @ lin.T
            far = np.minimum(depth[rows, cols].reshape(-1) - near, camera.far - near).astype(np.float32)
            hit = self._scene_of(obj.mesh).run(
                o_local.astype(np.float32), d_local.astype(np.float32), dists=far.copy(), output=1
            )
            nearer = (hit["primID"] >= 0) & (hit["tfar"] < far)
            if not nearer.any():
                continue
            shape = depth[rows, cols].shape
            nearer = nearer.reshape(shape)
            depth[rows, cols][nearer] = hit["tfar"].reshape(shape)[nearer] + near
            face[rows, cols][nearer] = hit["primID"].reshape(shape)[nearer] + face_offset[i]
            bary[rows, cols][nearer] = np.stack([hit["u"], hit["v"]], -1).reshape(*shape, 2)[nearer]


def _screen_window(
    mesh: Mesh, world_from_object: np.ndarray, camera_from_world: np.ndarray, intrinsics: np.ndarray,
    height: int, width: int, near: float,
) -> tuple[int, int, int, int] | None:
    """Pixel rows/columns [r0, r1) x [c0, c1) that the object's bounding box can cover, or None if none."""
    lo, hi = mesh.v_pos.min(0).values.double().numpy(), mesh.v_pos.max(0).values.double().numpy()
    corners = np.array([[x, y, z, 1.0] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])])
    p = corners @ (camera_from_world @ world_from_object).T
    z = p[:, 2]
    if (z <= near).all():
        return None
    if (z <= near).any():  # straddles the near plane: the projection is unbounded
        return 0, height, 0, width
    fx, fy, cx, cy = intrinsics
    x, y = fx * p[:, 0] / z + cx, fy * p[:, 1] / z + cy
    # Pixel centres at integers; one pixel of margin against rounding.
    c0, c1 = max(math.floor(x.min()) - 1, 0), min(math.ceil(x.max()) + 2, width)
    r0, r1 = max(math.floor(y.min()) - 1, 0), min(math.ceil(y.max()) + 2, height)
    return None if c0 >= c1 or r0 >= r1 else (r0, r1, c0, c1)


def _gbuffer_from_hits(merged: dict, face: torch.Tensor, bary: torch.Tensor, depth: torch.Tensor) -> GBuffer:
    """Interpolate UVs and look up labels from per-pixel triangle ids and Embree barycentrics.

    Args:
        merged: ``Scene.merged()`` arrays.
        face: (B, H, W) int64 triangle ids, -1 = no hit.
        bary: (B, H, W, 2) Embree (u, v): hit = (1 - u - v) * p0 + u * p1 + v * p2.
        depth: (B, H, W) camera Z, inf = no hit.
    """
    hit = face >= 0
    safe = face.clamp_min(0)
    corners = merged["v_uv"][merged["t_uv_idx"][safe]]  # (B, H, W, 3, 2)
    u, v = bary[..., 0:1], bary[..., 1:2]
    uv = (1 - u - v) * corners[..., 0, :] + u * corners[..., 1, :] + v * corners[..., 2, :]
    uv = (uv.clamp(0.0, 1.0) * hit[..., None]).permute(0, 3, 1, 2).contiguous()
    label = torch.where(hit, merged["t_label"][safe], torch.full_like(face, VOID))
    return GBuffer(uv=uv, label=label, depth=torch.where(hit, depth, torch.zeros_like(depth)), face_id=face)
