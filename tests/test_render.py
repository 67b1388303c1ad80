"""Render layer on the CPU (embree): analytic answers, occlusion, void, labels, supersampling."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from triton_s2r.render import (
    VOID,
    Camera,
    FrameState,
    LabelTable,
    Scene,
    SceneObject,
    make_rasterizer,
)
from triton_s2r.render.primitives import builtin_frames, quad


def translate(x: float, y: float, z: float) -> torch.Tensor:
    m = torch.eye(4)
    m[:3, 3] = torch.tensor([x, y, z])
    return m


def quad_scene(*objects: tuple[str, float, float]) -> Scene:
    """Unit-sized quads in planes z = const, facing +z; (name, size, z) per object, label = position."""
    names = tuple(o[0] for o in objects)
    return Scene(
        tuple(SceneObject(n, i + 1, quad(s, s).transformed(translate(0, 0, z))) for i, (n, s, z) in enumerate(objects)),
        LabelTable.evenly_spaced(names),
    )


def top_down_camera(size: int = 64, height: float = 2.0, fov: float = 40.0) -> Camera:
    return Camera.look_at([0, 0, height], [0, 0, 0], width=size, height=size, fov_y_deg=fov, up=(0, 1, 0))


@pytest.fixture(scope="module")
def embree():
    return make_rasterizer("embree")


def analytic_quad_uv(camera: Camera, plane_z: float = 0.0) -> tuple[torch.Tensor, torch.Tensor]:
    """Exact (u, v) of the unit quad at every pixel centre, and whether the centre lies on it."""
    d = camera.ray_directions()[0].double()
    o = camera.world_from_camera[0, :3, 3].double()
    t = (plane_z - o[2]) / d[..., 2]
    hit = o + t[..., None] * d
    uv = hit[..., :2] + 0.5
    inside = ((uv >= 0) & (uv <= 1)).all(-1)
    return uv.permute(2, 0, 1), inside


@pytest.mark.parametrize("supersample", [1, 2, 3])
def test_quad_uv_is_exact_at_pixel_centres(embree, supersample: int) -> None:
    scene = quad_scene(("quad", 1.0, 0.0))
    camera = top_down_camera()
    g = embree.render(scene, FrameState.static(scene, camera), supersample=supersample)
    assert g.uv.shape == (1, 2, 64 * supersample, 64 * supersample)
    expected, inside = analytic_quad_uv(camera.supersampled(supersample))
    # Pixels whose centre is clearly inside the quad are hit, with the analytic UV.
    interior = inside & (expected > 0.01).all(0) & (expected < 0.99).all(0)
    assert interior.sum() > 100
    assert g.mask[0][interior].all()
    err = (g.uv[0].double() - expected).abs()[:, interior]
    texel = 1.0 / (64 * supersample)  # one pixel's footprint in UV is about this or larger
    assert err.max() < 1e-4 < texel / 2
    assert (g.label[0][~inside] == VOID).all()
    # Image orientation: +x world is to the right (u grows with columns), +y world is up (v falls with rows).
    row = g.uv[0, :, g.height // 2]
    col = g.uv[0, :, :, g.width // 2]
    assert row[0, interior[g.height // 2]].diff().min() > 0
    assert col[1, interior[:, g.width // 2]].diff().max() < 0


def test_depth_is_camera_z(embree) -> None:
    scene = quad_scene(("quad", 1.0, 0.0))
    g = embree.render(scene, FrameState.static(scene, top_down_camera(height=2.0)))
    centre = g.depth[0, 30:34, 30:34]
    torch.testing.assert_close(centre, torch.full_like(centre, 2.0), atol=1e-5, rtol=0)
    assert (g.depth[0][~g.mask[0]] == 0).all()


def test_from_opencv_matches_look_at() -> None:
    cam = top_down_camera(size=48)
    fx, fy, cx, cy = cam.intrinsics[0].tolist()
    K = np.array([[fx, 0, cx], [0, fy, cy], [0, 0, 1]])
    cam_from_world = torch.linalg.inv(cam.world_from_camera[0]).numpy()
    other = Camera.from_opencv(K, width=48, height=48, R=cam_from_world[:3, :3], t=cam_from_world[:3, 3])
    torch.testing.assert_close(other.world_from_camera, cam.world_from_camera, atol=1e-5, rtol=0)
    torch.testing.assert_close(other.intrinsics, cam.intrinsics)
    # And projection agrees with OpenCV's formula.
    xy, z = cam.project(torch.tensor([[[0.1, 0.2, 0.0]]]))
    assert abs(float(z[0, 0]) - 2.0) < 1e-5
    assert abs(float(xy[0, 0, 0]) - (fx * 0.1 / 2 + cx)) < 1e-4
    assert abs(float(xy[0, 0, 1]) - (fy * -0.2 / 2 + cy)) < 1e-4  # world +y is image up


@pytest.mark.parametrize("order", [("near", "far"), ("far", "near")])
def test_nearer_objects_occlude_farther_ones(embree, order: tuple[str, str]) -> None:
    spec = {"near": ("near", 0.4, 0.5), "far": ("far", 1.0, 0.0)}
    scene = quad_scene(*(spec[o] for o in order))
    g = embree.render(scene, FrameState.static(scene, top_down_camera()))
    near_id, far_id = scene.labels.id_of("near"), scene.labels.id_of("far")
    assert g.label[0, 32, 32] == near_id
    assert abs(float(g.depth[0, 32, 32]) - 1.5) < 1e-5
    assert g.label[0, 32, 10] == far_id  # outside the small quad, the big one shows
    assert set(g.label.unique().tolist()) == {VOID, near_id, far_id}


def test_empty_view_is_all_void(embree) -> None:
    scene = quad_scene(("quad", 1.0, 0.0))
    away = Camera.look_at([0, 0, 2], [0, 0, 5], width=32, height=32, fov_y_deg=40, up=(0, 1, 0))
    g = embree.render(scene, FrameState.static(scene, away))
    assert (g.label == VOID).all() and (g.face_id == -1).all()
    assert (g.uv == 0).all() and (g.depth == 0).all()
    assert not g.mask.any()


def test_labels_follow_the_table(embree) -> None:
    scene, state = builtin_frames(4, width=96, height=96)
    g = embree.render(scene, state)
    merged = scene.merged()
    hit = g.face_id >= 0
    assert torch.equal(merged["t_label"][g.face_id[hit]], g.label[hit])
    assert torch.equal(hit, g.mask)
    assert set(g.label.unique().tolist()) == set(range(scene.labels.num_labels + 1))
    # Every pixel's owner object carries the label it shows.
    owners = merged["t_object"][g.face_id[hit]]
    labels_of_objects = torch.tensor([o.label for o in scene.objects])
    assert torch.equal(labels_of_objects[owners], g.label[hit])
    assert ((g.uv >= 0) & (g.uv <= 1)).all()


def test_object_poses_move_objects(embree) -> None:
    scene = quad_scene(("quad", 0.5, 0.0))
    camera = top_down_camera()
    state = FrameState.static(scene, camera)
    moved = FrameState(translate(0.3, 0, 0).expand(1, 1, 4, 4).clone(), camera)
    a, b = embree.render(scene, state), embree.render(scene, moved)
    # The object appears shifted right by 0.3 m * fx / depth pixels; its UVs travel with it.
    shift = 0.3 * float(camera.intrinsics[0, 0]) / 2.0
    cols_a = a.mask[0].any(0).nonzero().squeeze(1).double()
    cols_b = b.mask[0].any(0).nonzero().squeeze(1).double()
    assert abs((cols_b.mean() - cols_a.mean()).item() - shift) < 1.0
    torch.testing.assert_close(a.uv[0][:, a.mask[0]].mean(1), b.uv[0][:, b.mask[0]].mean(1), atol=0.02, rtol=0)


def test_supersampled_pixels_average_to_the_normal_ones(embree) -> None:
    scene = quad_scene(("quad", 1.0, 0.0))
    state = FrameState.static(scene, top_down_camera())
    g1, g2 = embree.render(scene, state), embree.render(scene, state, supersample=2)
    pooled = torch.nn.functional.avg_pool2d(g2.uv, 2)
    full = torch.nn.functional.avg_pool2d(g2.mask.float()[:, None], 2)[:, 0] == 1
    both = full & g1.mask
    assert both.sum() > 100
    # UV is affine on the quad's plane up to perspective, and the camera looks straight down: exact average.
    torch.testing.assert_close(pooled[0][:, both[0]], g1.uv[0][:, both[0]], atol=1e-5, rtol=0)


def test_backend_selection() -> None:
    assert make_rasterizer("embree").name == "embree"
    assert make_rasterizer("auto").name in ("embree", "nvdiffrast")
    with pytest.raises(ValueError, match="unknown render backend 'opengl'"):
        make_rasterizer("opengl")
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="needs a CUDA GPU"):
            make_rasterizer("nvdiffrast")
        assert make_rasterizer("auto").name == "embree"


def test_primitive_meshes_face_outwards() -> None:
    """Every triangle of the UV box is wound counter-clockwise seen from outside (normal away from the centre)."""
    from triton_s2r.render.primitives import box

    mesh = box((0.2, 0.3, 0.4))
    corners = mesh.v_pos[mesh.t_pos_idx]  # (F, 3, 3)
    normals = torch.linalg.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0], dim=-1)
    assert ((normals * corners.mean(1)).sum(-1) > 0).all()
