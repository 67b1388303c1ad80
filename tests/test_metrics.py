"""CPU tests of the evaluation metrics (issue 7) on synthetic images and rendered G-buffers."""

from __future__ import annotations

import math

import pytest
import torch

from triton_s2r.evaluation.flow import sample_at, source_positions
from triton_s2r.evaluation.metrics import (
    colour_error_by_label,
    colour_error_matrix,
    contrast_by_label,
    detail_by_label,
    label_iou,
    object_mask,
    psnr,
    ssim,
    surface_consistency,
    warp_error,
    warp_error_by_label,
)
from triton_s2r.models.texture_space import sample_label_textures
from triton_s2r.render import make_rasterizer
from triton_s2r.render.gbuffer import GBuffer
from triton_s2r.render.primitives import builtin_frames

TABLE = 1
# Smooth texture c_k(label, u, v) = 0.5 + AMPLITUDE * sin(2 pi (a_k u + b_k v) + phase_k * label).
AMPLITUDE = 0.1
FREQUENCIES = torch.tensor([[1.0, 0.5], [0.5, 1.0], [0.75, -0.75]])  # (a_k, b_k) per channel
PHASES = torch.tensor([0.7, 1.3, 2.1])
# max |dc/du| + max |dc/dv| over channels: the interpolation bounds of the temporal metrics scale with it.
TEXTURE_GRADIENT = AMPLITUDE * 2 * math.pi * FREQUENCIES.abs().sum(dim=1).max().item()


def random_images(batch: int = 2, size: int = 24, seed: int = 0) -> torch.Tensor:
    return torch.rand(batch, 3, size, size, generator=torch.Generator().manual_seed(seed))


def smooth_texture(gbuffer: GBuffer) -> torch.Tensor:
    """(T, 3, H, W) frames that are a fixed smooth function of (label, u, v); 0 on void."""
    uv, label = gbuffer.uv, gbuffer.label.float()
    angle = 2 * math.pi * torch.einsum("kc,tchw->tkhw", FREQUENCIES, uv) + PHASES.view(1, 3, 1, 1) * label[:, None]
    return (0.5 + AMPLITUDE * torch.sin(angle)) * gbuffer.mask[:, None]


def texel_aligned_sequence(num_frames: int = 4, size: int = 16, grid: int = 32, seed: int = 0):
    """Frames sampling a random texture exactly at texel centres, the view shifting by (1, 2) texels a frame.

    Two labels (left and right half of the image) and a void bottom row. The texture is noise, so any
    wrong correspondence (label, row/column order, offset) shows up as a large difference.
    """
    texture = torch.rand(2, 3, grid, grid, generator=torch.Generator().manual_seed(seed))  # (K, C, rows=u, cols=v)
    t = torch.arange(num_frames).view(-1, 1, 1)
    rows = torch.arange(size).view(1, -1, 1) + t  # texel row (u) seen by pixel (r, c) of frame t
    cols = torch.arange(size).view(1, 1, -1) + 2 * t
    rows, cols = torch.broadcast_tensors(rows, cols)
    label = torch.where(torch.arange(size) < size // 2, 1, 2).expand(num_frames, size, size).clone()
    label[:, -1] = 0
    uv = torch.stack([(rows + 0.5) / grid, (cols + 0.5) / grid], dim=1).float()
    frames = texture[(label - 1).clamp(min=0), :, rows, cols].permute(0, 3, 1, 2) * (label > 0)[:, None]
    return frames, GBuffer(uv, label), grid


@pytest.fixture(scope="module")
def orbit() -> GBuffer:
    """The built-in scene from 6 cameras 15 degrees apart on an orbit, 48x48 (4 labels)."""
    scene, state = builtin_frames(24, width=48, height=48)
    return make_rasterizer("embree").render(scene, state)[0:6]


def test_psnr_identical_images_score_exactly_the_cap():
    images = random_images()
    mask = torch.ones(2, 24, 24, dtype=torch.bool)
    assert psnr(images, images.clone()).item() == 100.0
    assert psnr(images, images.clone(), mask=mask, max_psnr=60.0).item() == 60.0
    assert torch.equal(psnr(images, images, reduction="none"), torch.full((2,), 100.0))


def test_psnr_matches_hand_computed_values_and_averages_per_image():
    pred = torch.zeros(2, 3, 4, 4)
    target = pred.clone()
    target[0, 1, 2, 3] = 0.5  # image 0: one error of 0.5 among 48 values
    target[1] = 0.1  # image 1: MSE 0.01 -> 20 dB
    expected = [10 * math.log10(48 / 0.25), 20.0]
    assert psnr(pred, target, reduction="none").tolist() == pytest.approx(expected, abs=1e-4)
    assert psnr(pred, target).item() == pytest.approx(sum(expected) / 2, abs=1e-4)  # not PSNR of the mean MSE
    mask = torch.zeros(2, 4, 4, dtype=torch.bool)
    mask[:, 2, 2:] = True  # 2 pixels, 6 values, one of them wrong in image 0
    assert psnr(pred, target, mask=mask, reduction="none")[0].item() == pytest.approx(10 * math.log10(24), abs=1e-4)


def test_psnr_and_ssim_decrease_as_noise_grows():
    images = random_images(size=32)
    noise = torch.randn(images.shape, generator=torch.Generator().manual_seed(1))
    scores = [(psnr(images, images + s * noise).item(), ssim(images, images + s * noise).item())
              for s in (0.0, 0.01, 0.05, 0.2)]
    psnrs, ssims = zip(*scores, strict=True)
    assert psnrs[0] == 100.0 and all(a > b for a, b in zip(psnrs, psnrs[1:], strict=False))
    assert ssims[0] == pytest.approx(1.0, abs=1e-6) and all(a > b for a, b in zip(ssims, ssims[1:], strict=False))
    assert ssims[-1] < 0.9
    # 10 log10(1 / s^2) for Gaussian noise of std s: a sanity check of units (dB, data range 1).
    assert psnrs[2] == pytest.approx(-20 * math.log10(0.05), abs=0.3)


def test_object_mask_excludes_void_and_excluded_labels():
    label = torch.tensor([[[0, 1, 2], [3, 1, 0]]])
    assert object_mask(label, exclude=[TABLE]).tolist() == [[[False, False, True], [True, False, False]]]
    assert object_mask(label, exclude=(TABLE, 3)).tolist() == [[[False, False, True], [False, False, False]]]
    assert torch.equal(object_mask(label), label != 0)


def test_masked_psnr_and_ssim_ignore_pixels_outside_the_mask():
    generator = torch.Generator().manual_seed(2)
    label = torch.randint(0, 4, (2, 32, 32), generator=generator)
    label[:, 8:20, 8:20] = 2  # a solid object so SSIM windows lie inside the mask too
    mask = object_mask(label, exclude=[TABLE])
    target = random_images(size=32, seed=3)
    pred = (target + 0.1 * torch.randn(target.shape, generator=generator)).clamp(0, 1)
    outside = ~mask[:, None]
    pred_changed = torch.where(outside, torch.rand(pred.shape, generator=generator), pred)
    target_changed = torch.where(outside, torch.rand(pred.shape, generator=generator), target)
    for metric in (psnr, ssim):
        reference = metric(pred, target, mask=mask)
        assert metric(pred_changed, target_changed, mask=mask).item() == pytest.approx(reference.item(), abs=1e-6)
        assert metric(pred_changed, target_changed).item() != pytest.approx(metric(pred, target).item(), abs=1e-3)
        inside_changed = torch.where(mask[:, None], pred.flip(-1), pred)  # and pixels inside do count
        assert metric(inside_changed, target, mask=mask).item() != pytest.approx(reference.item(), abs=1e-3)


def test_ssim_with_full_mask_equals_unmasked_torchmetrics_value():
    from torchmetrics.functional.image import structural_similarity_index_measure

    pred, target = random_images(size=32, seed=4), random_images(size=32, seed=5)
    full = torch.ones(2, 32, 32, dtype=torch.bool)
    expected = structural_similarity_index_measure(pred, target, data_range=1.0, sigma=1.5, kernel_size=11)
    assert ssim(pred, target).item() == pytest.approx(expected.item(), abs=1e-6)
    assert ssim(pred, target, mask=full).item() == pytest.approx(expected.item(), abs=1e-6)


def test_ssim_is_float32_under_bf16_autocast():
    """Validation runs inside the trainer's bf16 autocast; SSIM must not filter in bf16 there."""
    pred, target = random_images(size=32, seed=4), random_images(size=32, seed=5)
    expected = ssim(pred, target)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert ssim(pred, target).item() == pytest.approx(expected.item(), abs=1e-6)


def test_label_iou_per_label_over_all_frames():
    target = torch.tensor([[[0, 1, 1], [2, 2, 0]]])
    pred = torch.tensor([[[0, 1, 2], [2, 2, 1]]])
    iou = label_iou(pred, target, 3)
    assert iou.dtype == torch.float32 and iou.shape == (4,)
    torch.testing.assert_close(iou[:3], torch.tensor([1 / 2, 1 / 3, 2 / 3]))
    assert iou[3].isnan()  # neither map holds label 3
    assert torch.equal(label_iou(target, target, 3)[:3], torch.ones(3))
    assert label_iou(torch.zeros_like(target), target, 3)[1] == 0  # a label never predicted
    with pytest.raises(ValueError, match=r"must lie in 0\.\.1 .*got range \[0, 2\]"):
        label_iou(pred, target, 1)


def test_colour_error_by_label_sees_wrong_colours_and_not_blur():
    # Two frames, labels 0 (void, left), 1 (top right), 2 (bottom right; only in frame 0); label 3 never shown.
    real = random_images()
    label = torch.zeros(2, 24, 24, dtype=torch.int64)
    label[:, :12, 12:] = 1
    label[0, 12:, 12:] = 2
    # Each label region replaced by its own mean colour: the pattern is gone, the colour is right.
    flat = real.clone()
    for b in range(2):
        for value in label[b].unique():
            region = label[b] == value
            flat[b][:, region] = real[b][:, region].mean(dim=1, keepdim=True)
    assert psnr(flat, real) < 25
    assert torch.allclose(colour_error_by_label(flat, real, label, 3)[:3], torch.zeros(3), atol=1e-6)
    # Label 2 shifted by +0.1 in red only: its error is 0.1 / 3 channels; the others stay 0; label 3 is NaN.
    shifted = real.clone()
    shifted[0, 0][label[0] == 2] += 0.1
    error = colour_error_by_label(shifted, real, label, 3)
    assert error.shape == (4,) and error.dtype == torch.float32
    assert torch.allclose(error[:3], torch.tensor([0.0, 0.0, 0.1 / 3]), atol=1e-6)
    assert error[3].isnan()
    # Averaged over the frames that show a label: a shift in one of the two frames of label 1 counts half.
    shifted = real.clone()
    shifted[1, :][:, label[1] == 1] -= 0.2
    assert colour_error_by_label(shifted, real, label, 3)[1] == pytest.approx(0.1, abs=1e-6)
    with pytest.raises(ValueError, match="above num_labels=1"):
        colour_error_by_label(real, real, label, 1)
    with pytest.raises(ValueError, match="label must be"):
        colour_error_by_label(real, real, label[:, :8], 3)


def test_colour_error_matrix_finds_whose_colour_a_label_took():
    # Labels 1 and 2 in both frames, 3 in frame 0 only, 4 never shown; the translation swaps 1's and 2's colours.
    real = torch.zeros(2, 3, 8, 8)
    label = torch.zeros(2, 8, 8, dtype=torch.int64)
    label[:, :4, :4], label[:, 4:, :4], label[0, :, 4:] = 1, 2, 3
    colours = {1: (0.9, 0.1, 0.1), 2: (0.1, 0.8, 0.2), 3: (0.5, 0.5, 0.5)}
    for value, colour in colours.items():
        real.permute(0, 2, 3, 1)[label == value] = torch.tensor(colour)
    swapped = real.clone()
    swapped.permute(0, 2, 3, 1)[label == 1] = torch.tensor(colours[2])
    swapped.permute(0, 2, 3, 1)[label == 2] = torch.tensor(colours[1])
    matrix = colour_error_matrix(swapped, real, label, 4)
    assert matrix.shape == (5, 5) and matrix.dtype == torch.float32
    torch.testing.assert_close(matrix.diagonal(), colour_error_by_label(swapped, real, label, 4), equal_nan=True)
    assert matrix[1, 2] == pytest.approx(0.0, abs=1e-6) and matrix[2, 1] == pytest.approx(0.0, abs=1e-6)
    assert matrix[1, 1] == pytest.approx((0.8 + 0.7 + 0.1) / 3, abs=1e-6)
    assert matrix[3, 1] == pytest.approx((0.4 + 0.4 + 0.4) / 3, abs=1e-6)  # frame 0 only: the frames showing both
    assert matrix[4].isnan().all() and matrix[:, 4].isnan().all()


def test_detail_by_label_sees_a_pattern_flattened():
    # A grey table (label 1) with a 4x4 block (label 2) striped black and white in frame 0 only; label 3 never shown.
    images = torch.full((2, 3, 16, 16), 0.5)
    label = torch.zeros(2, 16, 16, dtype=torch.int64)
    label[:, 2:14, 2:14] = 1
    label[0, 6:10, 6:10] = 2
    images[0, :, 6:10, 6:10] = torch.tensor([0.0, 1.0]).repeat(2)[:, None]  # rows 0, 1, 0, 1: std 0.5
    detail = detail_by_label(images, label, 3)
    assert detail.shape == (4,) and detail.dtype == torch.float32
    assert detail[2] == pytest.approx(0.5, abs=1e-6) and detail[1] == pytest.approx(0.0, abs=1e-6)
    assert detail[3].isnan()
    repeated = detail_by_label(images.repeat(10, 1, 1, 1), label.repeat(10, 1, 1), 3)  # more frames
    assert torch.allclose(repeated, detail, equal_nan=True)
    flat = images.clone()
    flat[0, :, 6:10, 6:10] = 0.5  # the block in its mean colour: the right colour, no detail left
    assert detail_by_label(flat, label, 3)[2] == pytest.approx(0.0, abs=1e-6)
    with pytest.raises(ValueError, match="above num_labels=1"):
        detail_by_label(images, label, 1)


def test_contrast_by_label_sees_an_object_fade_into_its_surroundings():
    # A grey table (label 1) with a 4x4 block (label 2) in frame 0 only; label 3 never shown; void is the border.
    images = torch.full((2, 3, 16, 16), 0.2)
    label = torch.zeros(2, 16, 16, dtype=torch.int64)
    label[:, 2:14, 2:14] = 1
    images[:, :, 2:14, 2:14] = 0.5
    label[0, 6:10, 6:10] = 2
    images[0, 0, 6:10, 6:10] = 0.8  # red block: +0.3 in one channel against the table around it
    contrast = contrast_by_label(images, label, 3, ring=2)
    assert contrast.shape == (4,) and contrast.dtype == torch.float32
    assert contrast[2] == pytest.approx(0.1, abs=1e-6) and contrast[3].isnan()
    repeated = contrast_by_label(images.repeat(10, 1, 1, 1), label.repeat(10, 1, 1), 3, ring=2)  # several chunks
    assert torch.allclose(repeated, contrast, equal_nan=True)
    faded = images.clone()
    faded[0, 0, 6:10, 6:10] = 0.5  # the block drawn in the table's colour: no contrast left, whatever its shape
    assert contrast_by_label(faded, label, 3, ring=2)[2] == pytest.approx(0.0, abs=1e-6)
    # The table's contrast is against the void around it (0.3) and the block inside it, averaged over frames.
    assert 0.05 < float(contrast[1]) < 0.3
    with pytest.raises(ValueError, match="above num_labels=1"):
        contrast_by_label(images, label, 1)
    with pytest.raises(ValueError, match="ring must be >= 1"):
        contrast_by_label(images, label, 3, ring=0)


def test_empty_masks_and_bad_shapes_raise():
    images = random_images()
    mask = torch.ones(2, 24, 24, dtype=torch.bool)
    mask[1] = False
    for metric in (psnr, ssim):
        with pytest.raises(ValueError, match=r"empty in images \[1\]"):
            metric(images, images, mask=mask)
        with pytest.raises(ValueError, match="must both be"):
            metric(images, images[:, :, :8])
    frames, gbuffer, grid = texel_aligned_sequence()
    with pytest.raises(ValueError, match="at least 2 frames"):
        surface_consistency(frames[:1], gbuffer[0], 2, grid)
    with pytest.raises(ValueError, match="matching the G-buffer"):
        warp_error(frames[:3], gbuffer, grid)


def test_temporal_metrics_are_zero_for_a_fixed_texture_sampled_at_texel_centres():
    frames, gbuffer, grid = texel_aligned_sequence()
    assert surface_consistency(frames, gbuffer, num_labels=2, grid_size=grid).item() < 1e-5
    assert warp_error(frames, gbuffer, grid_size=grid).item() < 1e-5
    # Negative control: one frame's correspondence off by a single texel in u is caught by both.
    uv = gbuffer.uv.clone()
    uv[2, 0] += 1 / grid
    shifted = GBuffer(uv, gbuffer.label)
    assert surface_consistency(frames, shifted, num_labels=2, grid_size=grid).item() > 0.05
    assert warp_error(frames, shifted, grid_size=grid).item() > 0.05


def test_surface_consistency_is_the_std_of_per_frame_offsets():
    frames, gbuffer, grid = texel_aligned_sequence()
    static = GBuffer(gbuffer.uv[:1].repeat(4, 1, 1, 1), gbuffer.label[:1].repeat(4, 1, 1))  # camera at rest
    offsets = torch.tensor([0.0, 0.1, 0.0, 0.1]).view(4, 1, 1, 1)
    flicker = frames[:1] + offsets  # every texel seen in all four frames with equal weight
    assert surface_consistency(flicker, static, num_labels=2, grid_size=grid).item() == pytest.approx(0.05, abs=1e-6)
    assert warp_error(flicker, static, grid_size=grid).item() == pytest.approx(0.1, abs=1e-6)


def test_warp_error_by_label_finds_the_surface_that_flickers():
    frames, gbuffer, grid = texel_aligned_sequence()
    static = GBuffer(gbuffer.uv[:1].repeat(4, 1, 1, 1), gbuffer.label[:1].repeat(4, 1, 1))
    offsets = torch.tensor([0.0, 0.1, 0.0, 0.1]).view(4, 1, 1, 1)
    flicker = frames[:1] + offsets * (static.label == 2)[:, None]  # only the right half (label 2) flickers
    by_label = warp_error_by_label(flicker, static, num_labels=3, grid_size=grid)
    assert by_label[:2].tolist() == pytest.approx([0.0, 0.1], abs=1e-6)
    assert by_label[2].isnan()  # label 3 is never on screen
    # Both labels cover half of the counted pixels, so the whole-frame number is their mean.
    assert warp_error(flicker, static, grid_size=grid).item() == pytest.approx(0.05, abs=1e-6)
    with pytest.raises(ValueError, match="label 2 above num_labels=1"):
        warp_error_by_label(flicker, static, num_labels=1, grid_size=grid)


def test_temporal_metrics_of_a_static_smooth_texture_under_camera_motion_are_within_their_bounds(orbit):
    frames = smooth_texture(orbit)
    grid = 128
    consistency = surface_consistency(frames, orbit, num_labels=4, grid_size=grid).item()
    flicker = warp_error(frames, orbit, grid_size=grid).item()
    # Proven bounds (metric docstrings): gradient / D and 2 gradient / D; the means sit far below them.
    assert consistency < TEXTURE_GRADIENT / grid and consistency < 1e-3
    assert flicker < 2 * TEXTURE_GRADIENT / grid and flicker < 1e-3


def test_warp_error_is_exactly_zero_for_detail_finer_than_its_grid_on_surfaces_at_rest(orbit):
    # A fixed camera and a texture of noise at 512 texels a side, four times finer than the metric's grid:
    # every surface at rest, so no frame may differ from the last however detailed the texture.
    still = GBuffer(orbit.uv[:1].repeat(4, 1, 1, 1), orbit.label[:1].repeat(4, 1, 1))
    texture = torch.rand(4, 3, 512, 512, generator=torch.Generator().manual_seed(3))
    frames = sample_label_textures(texture, still.uv, still.label)
    assert warp_error(frames, still, grid_size=128).item() < 1e-6  # float rounding of the resampling only
    # The same frames with one frame brighter on the table only: caught, and on the table only.
    flicker = frames.clone()
    flicker[2] += 0.1 * (still.label[2] == TABLE)
    by_label = warp_error_by_label(flicker, still, num_labels=4, grid_size=128)
    assert by_label[TABLE - 1].item() == pytest.approx(0.1 * 2 / 3, abs=1e-6)  # pairs (1, 2) and (2, 3) of three
    assert by_label[TABLE:].nan_to_num(0.0).abs().max().item() < 1e-6


def test_source_positions_find_each_surface_point_in_the_previous_frame_under_camera_motion(orbit):
    # The orbit's camera turns 15 degrees a frame: every pixel moves, most surface points stay on screen.
    position, counted = source_positions(orbit.uv[:-1], orbit.label[:-1], orbit.uv[1:], orbit.label[1:], num_labels=4)
    shown = orbit.label[1:] > 0
    assert counted.sum() > 0.5 * shown.sum() and not (counted & ~shown).any()
    # At the positions found, the previous frame's UV map (interpolated) holds the pixel's own UV, but for a
    # few pixels at UV seams (7 of about 4,900 here).
    found = sample_at(orbit.uv[:-1], position).permute(0, 2, 3, 1)[counted]
    residual = (found - orbit.uv[1:].permute(0, 2, 3, 1)[counted]).abs().amax(-1)
    assert (residual > 1e-3).float().mean().item() < 0.005
    # They moved: the camera turned, so hardly any pixel keeps its place.
    pixels = torch.stack(torch.meshgrid(torch.arange(48), torch.arange(48), indexing="xy"), dim=-1).float()
    assert ((position - pixels)[counted].abs().amax(-1) > 0.5).float().mean() > 0.9


def test_surface_consistency_grows_monotonically_with_per_frame_noise(orbit):
    frames = smooth_texture(orbit)
    noise = torch.randn(frames.shape, generator=torch.Generator().manual_seed(6))
    scores = [surface_consistency(frames + s * noise, orbit, num_labels=4).item() for s in (0.0, 0.01, 0.03, 0.1)]
    assert all(a < b for a, b in zip(scores, scores[1:], strict=False)), scores
    assert scores[-1] > 20 * scores[0]


def test_warp_error_measures_per_frame_colour_changes(orbit):
    frames = smooth_texture(orbit)
    static = warp_error(frames, orbit).item()
    delta = 0.05
    offsets = delta * (torch.arange(frames.shape[0]) % 2).view(-1, 1, 1, 1).float()
    changed = warp_error(frames + offsets * orbit.mask[:, None], orbit).item()
    # Same counted pixels (they depend on the G-buffer only), each differing by +-delta plus the static
    # interpolation error e: by the triangle inequality |mean|e +- delta| - delta| <= mean|e|.
    assert abs(changed - delta) <= static + 1e-6
    assert changed > 5 * static
