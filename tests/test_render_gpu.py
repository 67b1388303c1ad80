"""nvdiffrast (CUDA) against embree (CPU): the two backends honour one contract. GPU machine only."""

from __future__ import annotations

import pytest
import torch

from triton_s2r.render import Camera, FrameState, LabelTable, Scene, SceneObject, make_rasterizer
from triton_s2r.render.primitives import builtin_frames, quad

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def backends():
    return make_rasterizer("embree"), make_rasterizer("nvdiffrast")


def compare(cpu, gpu, scene: Scene, state: FrameState, supersample: int = 1) -> tuple[float, float]:
    a = cpu.render(scene, state, supersample)
    b = gpu.render(scene, state, supersample).to("cpu")
    assert a.uv.shape == b.uv.shape
    labels_equal = (a.label == b.label).float().mean().item()
    same = (a.face_id == b.face_id) & (a.face_id >= 0)
    uv_diff = (a.uv - b.uv).abs().permute(0, 2, 3, 1)[same].mean().item()
    depth = (a.depth - b.depth).abs()[same].max().item()
    assert depth < 1e-3
    return labels_equal, uv_diff


@pytest.mark.parametrize("size", [(128, 128), (96, 160)])
def test_backends_agree_on_the_builtin_scene(backends, size: tuple[int, int]) -> None:
    h, w = size
    scene, state = builtin_frames(6, width=w, height=h)
    labels_equal, uv_diff = compare(*backends, scene, state)
    assert labels_equal >= 0.995, f"labels agree on only {labels_equal:.4%} of pixels"
    assert uv_diff < 1e-3, f"mean |uv difference| {uv_diff:.2e}"


def test_backends_agree_with_moving_objects_and_supersampling(backends) -> None:
    scene, state = builtin_frames(4, width=64, height=64)
    g = torch.Generator().manual_seed(0)
    poses = state.object_poses.clone()
    poses[:, 1:, :2, 3] += 0.05 * torch.randn(4, scene.num_objects - 1, 2, generator=g)
    labels_equal, uv_diff = compare(*backends, scene, FrameState(poses, state.camera), supersample=2)
    assert labels_equal >= 0.995 and uv_diff < 1e-3


def test_nvdiffrast_quad_uv_is_exact(backends) -> None:
    scene = Scene((SceneObject("quad", 1, quad()),), LabelTable(("quad",), (255,)))
    camera = Camera.look_at([0, 0, 2], [0, 0, 0], width=64, height=64, fov_y_deg=40, up=(0, 1, 0))
    gb = backends[1].render(scene, FrameState.static(scene, camera)).to("cpu")
    d = camera.ray_directions()[0].double()
    o = camera.world_from_camera[0, :3, 3].double()
    expected = (o + ((-o[2]) / d[..., 2])[..., None] * d)[..., :2].permute(2, 0, 1) + 0.5
    interior = ((expected > 0.01) & (expected < 0.99)).all(0)
    assert gb.mask[0][interior].all()
    assert (gb.uv[0].double() - expected).abs()[:, interior].max() < 1e-4


def test_batch_of_16_renders(backends) -> None:
    scene, state = builtin_frames(16, width=256, height=256)
    gb = backends[1].render(scene, state)
    assert gb.uv.shape == (16, 2, 256, 256) and gb.uv.is_cuda
    assert gb.mask.float().mean() > 0.3
