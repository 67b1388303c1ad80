"""The Mitsuba "real" domain: alignment with the UVL rasterizer, determinism, reuse, variants, textures.

Pixel alignment with the UVL rasterizer, determinism, reuse of one renderer across frames, the JIT variants
against ``scalar_rgb``, texture conventions.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
import torch

pytest.importorskip("mitsuba")

from triton_s2r.render import make_rasterizer  # noqa: E402
from triton_s2r.render.camera import Camera  # noqa: E402
from triton_s2r.render.primitives import builtin_frames, quad  # noqa: E402
from triton_s2r.render.scene import FrameState, LabelTable, Scene, SceneObject  # noqa: E402
from triton_s2r.tabletop import real  # noqa: E402
from triton_s2r.tabletop.appearance import Appearance, make_appearance, material_kinds  # noqa: E402
from triton_s2r.tabletop.lighting import frame_lighting  # noqa: E402
from triton_s2r.tabletop.materials import Material  # noqa: E402
from triton_s2r.tabletop.mitsuba_variant import CUDA_VARIANT, LLVM_VARIANT, load_mitsuba, variant_works  # noqa: E402
from triton_s2r.tabletop.real import RealRenderer, render_depth, render_real  # noqa: E402

SIZE = 48
VARIANT = "scalar_rgb"  # the variant that runs everywhere; the auto-probe is not what these tests check


@pytest.fixture(scope="module")
def frames() -> tuple[Scene, FrameState]:
    return builtin_frames(2, width=SIZE, height=SIZE)


@pytest.fixture(scope="module")
def appearance(frames: tuple[Scene, FrameState]) -> Appearance:
    return make_appearance(frames[0], seed=3, resolution=128)


def test_mitsuba_camera_is_pixel_aligned_with_the_rasterizer(frames: tuple[Scene, FrameState]) -> None:
    scene, state = frames
    # An off-centre principal point exercises principal_point_offset as well as the field of view.
    k = state.camera.intrinsics.clone()
    k[:, 2:] += torch.tensor([3.0, -2.0])
    state = FrameState(state.object_poses, Camera(state.camera.world_from_camera, k, SIZE, SIZE))
    gbuffer = make_rasterizer("embree").render(scene, state)
    depth = render_depth(scene, state, variant=VARIANT)
    label_mask, mitsuba_mask = gbuffer.label.numpy() > 0, depth > 0
    agreement = (label_mask == mitsuba_mask).mean()
    assert agreement >= 0.97, f"silhouettes agree on only {agreement:.3f} of pixels"
    both = label_mask & mitsuba_mask
    error = np.abs(depth[both] - gbuffer.depth.numpy()[both])
    assert np.median(error) < 1e-4 and error.max() < 0.05, f"depth: median error {np.median(error)}, max {error.max()}"


def test_render_real_is_deterministic_and_frames_are_independent_of_batching(frames, appearance) -> None:
    scene, state = frames
    a = render_real(scene, state, appearance=appearance, spp=4, seed=11, variant=VARIANT)
    b = render_real(scene, state, appearance=appearance, spp=4, seed=11, variant=VARIANT)
    assert a.shape == (2, SIZE, SIZE, 3) and a.dtype == np.uint8
    np.testing.assert_array_equal(a, b)
    alone = render_real(scene, state.select([1]), appearance=appearance, spp=4, seed=11, variant=VARIANT,
                        frame_ids=[1])
    np.testing.assert_array_equal(alone[0], a[1])


def test_a_reused_renderer_gives_the_pixels_of_fresh_ones_in_any_order(frames, appearance) -> None:
    # make_dataset renders every real frame with one RealRenderer, which loads its Mitsuba scene once and
    # updates the camera, lights and object poses for every frame.
    scene, state = frames
    poses = state.object_poses.clone()
    c, s = math.cos(0.7), math.sin(0.7)
    poses[1, 1:] = torch.tensor([[c, -s, 0, 0.05], [s, c, 0, -0.03], [0, 0, 1, 0], [0, 0, 0, 1]]) @ poses[1, 1:]
    state = FrameState(poses, state.camera)  # frame 1 moves the objects, not only the camera
    fresh = np.stack([render_real(scene, state.select([i]), appearance=appearance, spp=4, seed=2, variant=VARIANT,
                                  frame_ids=[i])[0] for i in (0, 1)])
    assert not np.array_equal(fresh[0], fresh[1])
    renderer = RealRenderer(scene, appearance, spp=4, seed=2, variant=VARIANT)
    np.testing.assert_array_equal(renderer.render(state.select([1, 0]), frame_ids=[1, 0]), fresh[::-1])
    np.testing.assert_array_equal(renderer.render(state, frame_ids=[0, 1]), fresh)
    # Another film size makes a new scene (with new shape groups).
    _, small = builtin_frames(2, width=SIZE // 2, height=SIZE // 2)
    np.testing.assert_array_equal(renderer.render(small, frame_ids=[0, 1]),
                                  render_real(scene, small, appearance=appearance, spp=4, seed=2, variant=VARIANT))


def test_a_jit_variant_that_cannot_render_here_is_refused_with_the_fix(monkeypatch) -> None:
    if variant_works(LLVM_VARIANT):
        pytest.skip("llvm_ad_rgb renders here")
    monkeypatch.setenv("TRITON_MITSUBA_VARIANT", LLVM_VARIANT)
    with pytest.raises(RuntimeError, match="libLLVM >= 19.*Unset TRITON_MITSUBA_VARIANT"):
        load_mitsuba(None)


def test_the_variant_probe_renders() -> None:
    # The probe of whether a JIT variant renders must itself be a valid render (Mitsuba 3.9 wants an integrator).
    assert variant_works("scalar_rgb")


@pytest.mark.parametrize("variant", [pytest.param(LLVM_VARIANT, id="llvm"),
                                     pytest.param(CUDA_VARIANT, id="cuda", marks=pytest.mark.gpu)])
def test_jit_variants_give_the_scalar_pixels_up_to_noise(frames, appearance, variant, monkeypatch) -> None:
    if not variant_works(variant):
        pytest.skip(f"Mitsuba {variant} does not render here (tabletop/mitsuba_variant.py says why)")
    scene, state = frames  # two frames through one renderer: cuda_ad_rgb 3.9.1 crashed at the second one

    def render(name: str) -> np.ndarray:
        return render_real(scene, state, appearance=appearance, spp=64, seed=0, variant=name).astype(np.float32)

    def block_rms(difference: np.ndarray) -> float:  # RMS of 4x4-pixel block means: noise averages out, bias not
        blocks = difference.reshape(-1, SIZE // 4, 4, SIZE // 4, 4, 3).mean((2, 4))
        return float(np.sqrt((blocks**2).mean()))

    scalar, jit = render(VARIANT), render(variant)
    # The noise level: scalar_rgb again with another sampler seed (lighting and sensor noise unchanged).
    monkeypatch.setattr(real, "frame_lighting", lambda seed, frame_id: replace(frame_lighting(seed, frame_id),
                                                                                render_seed=12345))
    scalar_again = render(VARIANT)
    noise = block_rms(scalar_again - scalar)
    assert 0 < noise < 3, f"scalar noise between sampler seeds: {noise:.2f} grey levels"
    # Two independent estimates differ by about `noise` (1.0-1.2 times it, measured with scalar seeds); a 3 %
    # brightness change or a one-pixel shift gives about 3 times it.
    gap = block_rms(jit - scalar)
    assert gap < 1.5 * noise + 0.3, f"{variant} vs scalar_rgb: {gap:.2f}, noise {noise:.2f} grey levels (4x4 blocks)"
    assert abs(jit.mean() - scalar.mean()) < 1.0


def test_seeds_change_noise_and_lighting(frames, appearance) -> None:
    scene, state = frames
    state = state.select([0])
    a = render_real(scene, state, appearance=appearance, spp=4, seed=0, variant=VARIANT).astype(np.float32)
    b = render_real(scene, state, appearance=appearance, spp=4, seed=1, variant=VARIANT).astype(np.float32)
    assert np.abs(a - b).mean() > 2.0  # grey levels: lighting moved, not just a few noisy pixels
    assert 20 < a.mean() < 235, "exposure far off: image nearly black or white"


def test_textures_are_rich_deterministic_and_in_range(frames) -> None:
    scene, _ = frames
    kinds = material_kinds(scene)
    assert kinds == {1: "wood", 2: "alphabet_block", 3: "ball", 4: "can"}
    first, again = make_appearance(scene, seed=5, resolution=192), make_appearance(scene, seed=5, resolution=192)
    other = make_appearance(scene, seed=6, resolution=192)
    for label, material in first.materials.items():
        for maps in (material.albedo, material.roughness, material.metallic):
            assert maps.dtype == np.float32 and maps.min() >= 0 and maps.max() <= 1
        assert material.albedo.shape == (192, 192, 3)
        np.testing.assert_array_equal(material.albedo, again.materials[label].albedo)
        assert not np.array_equal(material.albedo, other.materials[label].albedo)
    # A letter on every block face: strong edges inside each cell of the 3 x 2 atlas, and cells differ.
    block = first.materials[2].albedo.mean(-1)
    cells = [block[r * 96 + 20:(r + 1) * 96 - 20, c * 64 + 14:(c + 1) * 64 - 14] for r in range(2) for c in range(3)]
    for cell in cells:
        gradient = np.abs(np.diff(cell, axis=0)).mean() + np.abs(np.diff(cell, axis=1)).mean()
        assert gradient > 0.01 and cell.std() > 0.05
    assert len({c.tobytes() for c in cells}) == 6
    assert first.materials[1].albedo.std() > 0.03  # wood grain, not a flat colour


def test_label_textures_follow_the_model_layout(frames, appearance) -> None:
    textures = appearance.label_textures(32)
    assert textures.shape == (4, 3, 32, 32)
    albedo = appearance.materials[2].albedo
    h, w = albedo.shape[:2]
    for i, j in [(3, 28), (20, 5), (31, 0)]:  # rows follow u, columns follow v
        u, v = (i + 0.5) / 32, (j + 0.5) / 32
        expected = albedo[int((1 - v) * h), int(u * w)]
        np.testing.assert_allclose(textures[1, :, i, j], expected, atol=0.15)


def test_v_zero_is_the_bottom_of_the_texture_image() -> None:
    # A quad (u along +x, v along +y) seen from above with +y up in the image: the image top must show
    # the texture's top rows (v = 1), here red; the bottom, blue.
    albedo = np.zeros((16, 16, 3), np.float32)
    albedo[:8, :, 0], albedo[8:, :, 2] = 1.0, 1.0
    flat = np.full((16, 16), 0.9, np.float32)
    appearance = Appearance({1: Material("painted", albedo, flat, np.zeros_like(flat))}, seed=0)
    scene = Scene((SceneObject("card", 1, quad(1.0, 1.0)),), LabelTable(("card",), (255,)))
    camera = Camera.look_at([0.0, 0.0, 1.5], [0.0, 0.0, 0.0], width=SIZE, height=SIZE, fov_y_deg=30.0,
                            up=(0.0, 1.0, 0.0))
    image = render_real(scene, FrameState.static(scene, camera), appearance=appearance, spp=4, seed=0,
                        variant=VARIANT)[0].astype(np.float32)
    top, bottom = image[SIZE // 4, SIZE // 2], image[3 * SIZE // 4, SIZE // 2]
    assert top[0] > top[2] + 30 and bottom[2] > bottom[0] + 30, f"top {top}, bottom {bottom}"


def test_auto_picks_the_fastest_variant_that_renders(monkeypatch) -> None:
    """Unset or ``auto``: cuda_ad_rgb, then llvm_ad_rgb, then scalar_rgb, whichever renders here first."""
    from triton_s2r.tabletop import mitsuba_variant

    for works, expected in (({CUDA_VARIANT, LLVM_VARIANT}, CUDA_VARIANT), ({LLVM_VARIANT}, LLVM_VARIANT),
                            (set(), "scalar_rgb")):
        monkeypatch.setattr(mitsuba_variant, "variant_works", lambda name, works=works: name in works)
        for env in (None, "auto"):
            if env is None:
                monkeypatch.delenv("TRITON_MITSUBA_VARIANT", raising=False)
            else:
                monkeypatch.setenv("TRITON_MITSUBA_VARIANT", env)
            assert mitsuba_variant.select_variant() == expected
        assert mitsuba_variant.select_variant("scalar_rgb") == "scalar_rgb"  # an explicit choice stays
