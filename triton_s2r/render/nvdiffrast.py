"""CUDA render backend: nvdiffrast's rasterizer (``rasterize`` + ``interpolate``), batched.

Only this module imports nvdiffrast (PyPI: ``diffrp-nvdiffrast``, extra ``gpu``), which compiles its
CUDA plugin with nvcc and ninja on first use (a minute or so, cached by torch afterwards).

Projection: OpenCV pixel coordinates map to clip space without a vertical flip, because nvdiffrast
stores NDC y = -1 in row 0 and we send image row 0 (OpenCV's top) there. Pixel centres agree with the
embree backend: column j's centre is NDC x = (2j + 1) / W - 1.
"""

from __future__ import annotations

import sys
import weakref

import torch
from torch import Tensor

from triton_s2r.render.camera import Camera
from triton_s2r.render.gbuffer import VOID, GBuffer
from triton_s2r.render.scene import FrameState, Scene
from triton_s2r.utils.optional import require


def _cuda_context(device: torch.device):
    """``RasterizeCudaContext`` on ``device``, working around the plugin-import quirk.

    With diffrp-nvdiffrast and recent torch, the freshly JIT-built plugin can fail to import with
    ``ModuleNotFoundError: nvdiffrast_plugin_...`` because torch does not put its build directory on
    ``sys.path``. Adding that directory and retrying loads the already-built plugin.
    """
    dr = require("nvdiffrast.torch", extra="gpu", package="diffrp-nvdiffrast")
    try:
        return dr, dr.RasterizeCudaContext(device=device)
    except ModuleNotFoundError as exc:
        name = exc.name or ""
        if not name.startswith("nvdiffrast_plugin"):
            raise
        from torch.utils.cpp_extension import _get_build_directory

        sys.path.insert(0, _get_build_directory(name, False))
        return dr, dr.RasterizeCudaContext(device=device)


def clip_from_camera(camera: Camera) -> Tensor:
    """OpenGL-style projection with OpenCV pixel centres: clip = P @ (x, y, z, 1) of a camera-frame point.

    Args:
        camera: B cameras.

    Returns:
        (B, 4, 4) float32 P; clip w = camera Z, NDC z in [-1, 1] between near and far.
    """
    fx, fy, cx, cy = camera.intrinsics.float().unbind(-1)
    n, f = camera.near, camera.far
    p = torch.zeros(camera.batch_size, 4, 4)
    p[:, 0, 0], p[:, 0, 2] = 2 * fx / camera.width, (2 * cx + 1) / camera.width - 1
    p[:, 1, 1], p[:, 1, 2] = 2 * fy / camera.height, (2 * cy + 1) / camera.height - 1
    p[:, 2, 2], p[:, 2, 3] = (f + n) / (f - n), -2 * f * n / (f - n)
    p[:, 3, 2] = 1.0
    return p


class NvdiffrastRasterizer:
    """Renders G-buffers on a CUDA device; see ``triton_s2r.render.rasterizer`` for the contract."""

    name = "nvdiffrast"

    def __init__(self, device: torch.device | str = "cuda") -> None:
        self.device = torch.device(device)
        if self.device.type != "cuda":
            raise ValueError(f"the nvdiffrast backend needs a CUDA device, got {self.device}")
        self._dr, self._ctx = _cuda_context(self.device)
        # nvdiffrast's rasterizer waits for its stream once per call (it reads back its bin counters); on a
        # stream of its own that wait covers only the rendering, not the training work queued before it.
        self._stream = torch.cuda.Stream(self.device)
        self._uploaded: weakref.WeakKeyDictionary[Scene, dict] = weakref.WeakKeyDictionary()

    def _upload(self, scene: Scene) -> dict:
        """Scene arrays on the device, in the dtypes nvdiffrast wants (cached per scene)."""
        if scene not in self._uploaded:
            m = scene.merged()
            self._uploaded[scene] = {
                "v_pos": torch.cat([m["v_pos"], torch.ones(len(m["v_pos"]), 1)], 1).to(self.device),  # (V, 4)
                "v_object": m["v_object"].to(self.device),
                "t_pos_idx": m["t_pos_idx"].to(self.device, torch.int32).contiguous(),
                "v_uv": m["v_uv"].to(self.device)[None].contiguous(),
                "t_uv_idx": m["t_uv_idx"].to(self.device, torch.int32).contiguous(),
                # Index 0 = background (nvdiffrast's triangle id 0), then one label per triangle.
                "label_lut": torch.cat([torch.tensor([VOID]), m["t_label"]]).to(self.device),
            }
        return self._uploaded[scene]

    @torch.no_grad()
    def render(self, scene: Scene, state: FrameState, supersample: int = 1) -> GBuffer:
        """Rasterize every frame on this backend's GPU, on a stream of its own; see ``UVLRasterizer.render``."""
        # The per-frame matrices are small: built on the host and uploaded in one asynchronous copy, so that
        # rendering never makes the host wait for the GPU (a training step queues its work ahead).
        state = state.to("cpu")
        camera = state.camera.supersampled(supersample)
        # clip_from_object per frame and object: (B, N, 4, 4).
        transforms = clip_from_camera(camera)[:, None] @ camera.camera_from_world[:, None] @ state.object_poses
        main = torch.cuda.current_stream(self.device)
        with torch.cuda.stream(self._stream), torch.autocast("cuda", enabled=False):  # float32 inside bf16 steps
            data = self._upload(scene)
            transforms = transforms.pin_memory().to(self.device, non_blocking=True)
            # One gather and one product for all objects; the gathered (B, V, 4, 4) matrices are temporary
            # (about 100 MB for 5 frames of the 315k-vertex tabletop scene).
            clip = torch.einsum("bvij,vj->bvi", transforms[:, data["v_object"]], data["v_pos"]).contiguous()
            res = [camera.height, camera.width]
            rast, _ = self._dr.rasterize(self._ctx, clip, data["t_pos_idx"], resolution=res)
            uv, _ = self._dr.interpolate(data["v_uv"], rast, data["t_uv_idx"])
            depth, _ = self._dr.interpolate(clip[..., 3:4].contiguous(), rast, data["t_pos_idx"])  # w = camera Z
            tri = rast[..., 3].to(torch.int64)  # 0 = background, else triangle id + 1
            hit = tri > 0
            g = GBuffer(
                uv=(uv.clamp(0.0, 1.0) * hit[..., None]).permute(0, 3, 1, 2).contiguous(),
                label=data["label_lut"][tri],
                depth=depth[..., 0] * hit,
                face_id=tri - 1,
            )
        main.wait_stream(self._stream)  # on the GPU: the caller's work starts once the G-buffer is done
        for tensor in (g.uv, g.label, g.depth, g.face_id):
            assert tensor is not None  # this backend fills all four
            tensor.record_stream(main)  # its memory is not reused while the caller's stream may still read it
        return g
