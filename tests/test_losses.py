"""CPU tests of the TRITON losses on tiny inputs."""

from __future__ import annotations

import math

import pytest
import torch

from triton_s2r.losses import (
    discriminator_adversarial_loss,
    generator_adversarial_loss,
    mean_logit,
    ms_ssim,
    ms_ssim_levels,
    r1_penalty,
    reconstruction_loss,
    reconstruction_losses,
    surface_chroma_consistency_loss,
    surface_consistency_loss,
    texture_reality_loss,
    texture_reality_target,
)
from triton_s2r.losses.reconstruction import MS_SSIM_BETAS, gaussian_window
from triton_s2r.losses.settings import LossSettings
from triton_s2r.losses.surface_consistency import blur_within_labels
from triton_s2r.models import (
    MultiScaleDiscriminator,
    NeuralTexture,
    RasterTexture,
    SimInput,
    StyleFreeGenerator,
    texture_projection,
)
from triton_s2r.models.texture_space import unproject_to_texels

NUM_LABELS = 2
GRID = 8


def make_gbuffer(batch: int = 4, size: int = 32, num_labels: int = NUM_LABELS, seed: int = 0):
    """Independent random UVs per pixel and image; labels in 0..K with about 1/(K+1) void."""
    generator = torch.Generator().manual_seed(seed)
    uv = torch.rand(batch, 2, size, size, generator=generator)
    label = torch.randint(0, num_labels + 1, (batch, size, size), generator=generator)
    return uv, label


def surface_colour(uv, label):
    """An image that is a smooth function of (label, u, v) only, in [-1, 1]."""
    u, v, lab = uv[:, 0], uv[:, 1], label.float()
    image = torch.stack(
        [torch.sin(u + lab), torch.cos(v - lab), 0.5 * (u * v + lab / NUM_LABELS) - 0.5], dim=1
    )
    return image * (label > 0).unsqueeze(1)


def test_unprojection_rows_follow_u():
    uv, label = make_gbuffer(batch=1, size=64)
    image = (2 * uv[:, :1] - 1).expand(-1, 3, -1, -1)  # depends on u only
    texel_mean, texel_weight = unproject_to_texels(image, uv, label, NUM_LABELS, grid_size=GRID)
    assert texel_mean.shape == (1, NUM_LABELS, 3, GRID, GRID) and texel_weight.shape == (
        1,
        NUM_LABELS,
        GRID,
        GRID,
    )
    assert torch.all(texel_weight > 0)
    row_means = texel_mean[0, 0, 0].mean(dim=1)  # average over columns (v)
    assert torch.all(row_means.diff() > 0)  # increases with u along rows
    assert texel_mean[0, 0, 0].std(dim=1).max() < 0.1 * row_means.std()


def test_surface_consistency_exactly_zero_when_views_see_the_same_surface_samples():
    uv, label = make_gbuffer(batch=1)
    # Three "views" showing the same surface samples at different pixels.
    order = [torch.randperm(32 * 32, generator=torch.Generator().manual_seed(seed)) for seed in range(3)]
    views_uv = torch.stack([uv.flatten(2)[0][:, index].view(2, 32, 32) for index in order])
    views_label = torch.stack([label.flatten(1)[0][index].view(32, 32) for index in order])
    loss = surface_consistency_loss(
        surface_colour(views_uv, views_label), views_uv, views_label, NUM_LABELS, GRID
    )
    assert loss.item() == pytest.approx(0.0, abs=1e-5)


def test_surface_consistency_near_zero_for_surface_function_and_large_with_frame_noise():
    uv, label = make_gbuffer(batch=4, size=48)
    image = surface_colour(uv, label)
    consistent = surface_consistency_loss(image, uv, label, NUM_LABELS, GRID)
    frame_noise = 0.2 * torch.randn(4, 3, 1, 1, generator=torch.Generator().manual_seed(1))
    noisy = surface_consistency_loss(image + frame_noise, uv, label, NUM_LABELS, GRID)
    assert consistent < 0.01
    assert noisy > 0.1 and noisy > 20 * consistent


def test_surface_consistency_is_invariant_to_batch_order():
    uv, label = make_gbuffer()
    image = torch.randn(4, 3, 32, 32, generator=torch.Generator().manual_seed(2))
    order = torch.tensor([2, 0, 3, 1])
    forward = surface_consistency_loss(image, uv, label, NUM_LABELS, GRID)
    shuffled = surface_consistency_loss(image[order], uv[order], label[order], NUM_LABELS, GRID)
    torch.testing.assert_close(shuffled, forward)


def test_surface_consistency_within_clips_compares_only_the_frames_of_a_clip():
    uv, label = make_gbuffer(batch=4, size=48)
    image = surface_colour(uv, label)
    # Clip [0, 1] is brighter than clip [2, 3]: a change between clips, none within one.
    step = torch.tensor([0.3, 0.3, 0.0, 0.0]).view(4, 1, 1, 1)
    assert surface_consistency_loss(image + step, uv, label, NUM_LABELS, GRID) > 0.1
    within = surface_consistency_loss(image + step, uv, label, NUM_LABELS, GRID, sim_clip_frames=2)
    assert within < 0.01
    # Flicker inside the clips counts as before: the mean of the two clips' own ℓUC.
    flicker = torch.tensor([0.0, 0.3, 0.0, 0.3]).view(4, 1, 1, 1)
    per_clip = [surface_consistency_loss((image + flicker)[k:k + 2], uv[k:k + 2], label[k:k + 2], NUM_LABELS, GRID)
                for k in (0, 2)]
    torch.testing.assert_close(
        surface_consistency_loss(image + flicker, uv, label, NUM_LABELS, GRID, sim_clip_frames=2),
        torch.stack(per_clip).mean())
    assert per_clip[0] > 0.1
    with pytest.raises(ValueError, match="does not split into clips of 3"):
        surface_consistency_loss(image, uv, label, NUM_LABELS, GRID, sim_clip_frames=3)


def test_blur_within_labels_smooths_each_label_without_mixing_its_neighbours():
    label = torch.ones(1, 32, 32, dtype=torch.long)
    label[..., 16:] = 2
    label[..., :2, :] = 0  # a void strip
    stripes = (torch.arange(32) % 2 * 2 - 1.0).expand(32, 32)  # +-1 by column
    image = torch.where(label == 1, stripes, 0.5).unsqueeze(1).expand(1, 3, 32, 32).clone()
    blurred = blur_within_labels(image, label, 2, sigma=1.0)
    assert blurred.shape == image.shape
    # Label 2 takes nothing of label 1's stripes or the void's colour.
    torch.testing.assert_close(blurred[0, :, label[0] == 2], torch.full_like(blurred[0, :, label[0] == 2], 0.5))
    inside = blurred[0, 0, 4:-4, 4:12]  # label 1, away from its border
    assert inside.abs().max() < 0.2 * stripes.abs().max()  # the 2-pixel stripes are mostly averaged out
    assert inside.mean().abs() < 0.05


def test_surface_consistency_blur_spares_detail_that_views_sample_differently_not_flicker():
    # Two views of one surface whose colour is a fine pattern of u, sampled half a pixel apart: consistent
    # surface colours, yet the splat compares different samples of the pattern and charges its detail.
    size = 32
    columns = (torch.arange(size) + 0.5) / size
    uv = torch.stack([torch.stack([(columns + shift / size).clamp(0, 1).expand(size, size),
                                   columns.view(-1, 1).expand(size, size)]) for shift in (0.0, 0.5)])
    label = torch.ones(2, size, size, dtype=torch.long)
    detail = torch.sin(uv[:, :1] * size * math.pi * 0.9).expand(-1, 3, -1, -1)  # a period of ~2 pixels
    flicker = 0.2 * uv[:, :1].expand(-1, 3, -1, -1) + torch.tensor([0.0, 0.3]).view(2, 1, 1, 1)

    def loss(image, sigma):
        return surface_consistency_loss(image, uv, label, 1, size, blur_sigma=sigma).item()

    assert loss(detail, 1.0) < 0.3 * loss(detail, 0.0)
    assert loss(flicker, 1.0) > 0.8 * loss(flicker, 0.0) > 0.1
    with pytest.raises(ValueError, match="loss.surface_blur_sigma"):
        LossSettings(loss_weights={}, surface_blur_sigma=-1.0)


def test_surface_consistency_has_finite_gradients_when_all_texels_agree_exactly():
    uv, label = make_gbuffer()
    image = torch.full((4, 3, 32, 32), 0.3, requires_grad=True)
    for normalization in (None, 0.1):
        loss = surface_consistency_loss(
            image, uv, label, NUM_LABELS, GRID, color_normalization_eps=normalization
        )
        (gradient,) = torch.autograd.grad(loss, image)
        assert loss.item() == pytest.approx(0.0, abs=1e-6)
        assert torch.isfinite(gradient).all()


@pytest.mark.parametrize("case", ["single_image", "disjoint_labels"])
def test_surface_consistency_is_zero_safe_when_texels_are_seen_once(case):
    uv, label = make_gbuffer(batch=1 if case == "single_image" else 2)
    if case == "disjoint_labels":
        label = torch.stack(
            [label[0].clamp(max=1), 2 * label[1].clamp(max=1)]
        )  # image 0: label 1; image 1: label 2
    image = torch.randn(label.shape[0], 3, 32, 32, requires_grad=True)
    loss = surface_consistency_loss(image, uv, label, NUM_LABELS, GRID)
    loss.backward()
    assert loss.item() == 0.0
    assert torch.isfinite(image.grad).all() and torch.all(image.grad == 0)


def test_surface_consistency_ignores_void_pixels():
    uv, label = make_gbuffer()
    image = torch.randn(4, 3, 32, 32, generator=torch.Generator().manual_seed(3))
    repainted = torch.where((label == 0).unsqueeze(1), torch.full_like(image, 5.0), image)
    torch.testing.assert_close(
        surface_consistency_loss(repainted, uv, label, NUM_LABELS, GRID),
        surface_consistency_loss(image, uv, label, NUM_LABELS, GRID),
    )


def test_colour_normalisation_ignores_per_frame_brightness():
    uv, label = make_gbuffer()
    image = surface_colour(uv, label) + 1.5  # keep colours away from the origin
    brightness = torch.tensor([0.6, 1.0, 1.3, 0.8]).view(4, 1, 1, 1)
    plain = surface_consistency_loss(image * brightness, uv, label, NUM_LABELS, GRID)
    normalised = surface_consistency_loss(
        image * brightness, uv, label, NUM_LABELS, GRID, color_normalization_eps=1e-6
    )
    assert plain > 0.1
    assert normalised < 0.05 * plain


def test_chroma_consistency_ignores_shading_of_any_colour_but_not_hue():
    # Shading scales the [0, 1] colour, (x + 1) / 2; with colours on both sides of mid-grey only the
    # normalisation of x + 1 (nearly, with ε_c = 0.1) ignores it. Plain ℓUC sees shading more than a hue shift
    # of 0.3; the chroma term sees the hue shift far more.
    uv, label = make_gbuffer()
    image = surface_colour(uv, label)  # [-1, 1], crossing 0
    brightness = torch.tensor([0.5, 1.0, 0.8, 0.65]).view(4, 1, 1, 1)
    shaded = (image + 1) * brightness - 1
    hue_shift = torch.tensor([[0.0, 0.3, -0.3], [0.0] * 3, [0.0] * 3, [-0.3, 0.3, 0.0]]).view(4, 3, 1, 1)
    recoloured = (image + hue_shift).clamp(-1, 1)

    def plain(colours: torch.Tensor) -> torch.Tensor:
        return surface_consistency_loss(colours, uv, label, NUM_LABELS, GRID)

    def chroma(colours: torch.Tensor) -> torch.Tensor:
        return surface_chroma_consistency_loss(colours, uv, label, NUM_LABELS, GRID)

    assert plain(recoloured) > 10 * plain(image) and plain(shaded) > 1.5 * plain(recoloured)
    assert chroma(recoloured) > 10 * chroma(image) and chroma(recoloured) > 5 * chroma(shaded)


@pytest.mark.parametrize("size, levels", [(256, 5), (128, 4), (64, 3), (32, 2), (16, 2), (11, 1), (10, 0)])
def test_ms_ssim_levels_fit_the_image(size, levels):
    assert ms_ssim_levels(size, size) == levels


@pytest.mark.parametrize("size, channels", [(11, 3), (16, 3), (32, 3), (64, 8), (256, 1)])
def test_ms_ssim_of_identical_images_is_one_and_drops_with_noise(size, channels):
    generator = torch.Generator().manual_seed(4)
    image = torch.rand(2, channels, size, size, generator=generator) * 2 - 1
    assert ms_ssim(image, image, data_range=2.0).item() == pytest.approx(1.0, abs=1e-5)
    noise = torch.randn(image.shape, generator=generator)
    slightly, heavily = ms_ssim(image, image + 0.05 * noise, 2.0), ms_ssim(image, image + 0.5 * noise, 2.0)
    assert 0.0 <= heavily < slightly < 1.0


@pytest.mark.parametrize(("size", "channels"), [(256, 6), (64, 8), (40, 3)])
def test_ms_ssim_equals_torchmetrics_ms_ssim(size, channels):
    """Built level by level from the SSIM (banded Gaussian window on the CPU), it equals torchmetrics' MS-SSIM."""
    from torchmetrics.functional.image import multiscale_structural_similarity_index_measure

    generator = torch.Generator().manual_seed(size)
    x = torch.rand(2, channels, size, size, generator=generator) * 2 - 1
    y = (x + 0.3 * torch.randn(x.shape, generator=generator)).clamp(-1, 1)
    levels = ms_ssim_levels(size, size)
    betas = tuple(b / sum(MS_SSIM_BETAS[:levels]) for b in MS_SSIM_BETAS[:levels])
    expected = multiscale_structural_similarity_index_measure(x, y, sigma=1.5, kernel_size=11, data_range=2.0,
                                                              betas=betas, normalize="simple")
    torch.testing.assert_close(ms_ssim(x, y, data_range=2.0), expected, rtol=1e-5, atol=1e-6)


def test_gaussian_window_as_banded_products_equals_the_depthwise_convolution():
    """The two ways of ``gaussian_window`` (CPU: banded products; other devices: convolution), values and gradients."""
    generator = torch.Generator().manual_seed(0)
    x = torch.rand(3, 4, 37, 29, generator=generator)
    outputs, gradients = [], []
    for banded in (True, False):
        leaf = x.clone().requires_grad_()
        out = gaussian_window(leaf, banded=banded)
        (out * torch.linspace(0, 1, out.numel()).view(out.shape)).sum().backward()
        outputs.append(out)
        gradients.append(leaf.grad)
    assert outputs[0].shape == (3, 4, 27, 19)
    torch.testing.assert_close(outputs[0], outputs[1], rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(gradients[0], gradients[1], rtol=1e-5, atol=1e-6)
    # a constant image stays constant: the window sums to 1
    torch.testing.assert_close(gaussian_window(torch.full((1, 1, 11, 11), 0.7)), torch.full((1, 1, 1, 1), 0.7))


def test_gaussian_window_made_under_inference_mode_serves_a_later_backward_pass():
    """The window is kept between calls: one first made by an evaluation must not be an inference tensor."""
    x = torch.rand(2, 5, 23, 31, generator=torch.Generator().manual_seed(1))
    for banded in (True, False):
        with torch.inference_mode():
            first = gaussian_window(x, banded=banded)
        leaf = x.clone().requires_grad_()
        out = gaussian_window(leaf, banded=banded)
        out.sum().backward()
        torch.testing.assert_close(out.detach(), first)
        assert leaf.grad is not None and leaf.grad.abs().sum() > 0


def test_ms_ssim_rejects_images_smaller_than_its_window():
    with pytest.raises(ValueError, match="'l1' or 'l2'"):
        ms_ssim(torch.zeros(1, 3, 8, 8), torch.zeros(1, 3, 8, 8), data_range=2.0)


@pytest.mark.parametrize("criterion", ["l1", "l2", "l1_ms_ssim", "l2_ms_ssim"])
def test_reconstruction_is_zero_for_identical_and_positive_otherwise(criterion):
    image = torch.rand(2, 6, 32, 32) * 2 - 1
    assert reconstruction_loss(image, image, criterion).item() == pytest.approx(0.0, abs=1e-5)
    assert reconstruction_loss(image, image.flip(-1), criterion) > 0.05


def test_reconstruction_pixel_terms_and_mask():
    target = torch.zeros(1, 3, 16, 16)
    assert reconstruction_loss(target + 0.5, target, "l1").item() == pytest.approx(0.5)
    assert reconstruction_loss(target + 0.5, target, "l2").item() == pytest.approx(0.25)
    prediction = target.clone()
    prediction[..., :8] = 3.0  # wrong only in the masked-out left half
    mask = torch.zeros(1, 16, 16, dtype=torch.bool)
    mask[..., 8:] = True
    for criterion in ("l1", "l1_ms_ssim"):
        assert reconstruction_loss(prediction, target, criterion, mask=mask).item() == pytest.approx(
            0.0, abs=1e-5
        )
    with pytest.raises(ValueError, match="criterion"):
        reconstruction_loss(target, target, "ssim")


@pytest.mark.parametrize("criterion", ["l1", "l2_ms_ssim"])
def test_reconstruction_losses_of_slices_equal_separate_calls(criterion):
    """One pass over concatenated slices gives each slice's Ω, with gradients reaching every slice."""
    generator = torch.Generator().manual_seed(0)
    targets = [torch.rand(2, 6, 48, 48, generator=generator) * 4 - 2 for _ in range(3)]
    predictions = [(t + torch.randn(t.shape, generator=generator) * k).requires_grad_() for k, t in
                   zip((0.1, 0.4, 1.0), targets, strict=True)]
    together = reconstruction_losses(torch.cat(predictions), torch.cat(targets), 3, criterion, data_range=4.0)
    separate = torch.stack([reconstruction_loss(p, t, criterion, 4.0)
                            for p, t in zip(predictions, targets, strict=True)])
    assert together.shape == (3,)
    assert separate[0] < separate[1] < separate[2]
    torch.testing.assert_close(together, separate, rtol=1e-5, atol=1e-6)
    grads_together = torch.autograd.grad(together.sum(), predictions)
    grads_separate = torch.autograd.grad(separate.sum(), predictions)
    for a, b in zip(grads_together, grads_separate, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-8)
    with pytest.raises(ValueError, match="divide"):
        reconstruction_losses(torch.cat(predictions), torch.cat(targets), 4, criterion)


def test_adversarial_losses_known_values():
    ones, zeros = (
        [torch.ones(2, 1, 4, 4), torch.ones(2, 1, 2, 2)],
        [torch.zeros(2, 1, 4, 4), torch.zeros(2, 1, 2, 2)],
    )
    assert discriminator_adversarial_loss(ones, zeros, "lsgan").item() == 0.0  # perfect discriminator
    assert discriminator_adversarial_loss(zeros, ones, "lsgan").item() == pytest.approx(
        4.0
    )  # 2 scales x (1 + 1)
    assert generator_adversarial_loss(zeros, "lsgan").item() == pytest.approx(2.0)
    assert generator_adversarial_loss(ones, "lsgan").item() == 0.0
    assert discriminator_adversarial_loss(ones, [-z - 1 for z in zeros], "hinge").item() == 0.0
    assert discriminator_adversarial_loss(zeros, zeros, "hinge").item() == pytest.approx(4.0)
    assert generator_adversarial_loss([3 * o for o in ones], "hinge").item() == pytest.approx(-6.0)
    fake = [torch.zeros(1, 1, 4, 4, requires_grad=True)]
    generator_adversarial_loss(fake, "lsgan").backward()
    assert torch.all(fake[0].grad < 0)  # descending raises the fake logits towards "real"
    with pytest.raises(ValueError, match="gan_type"):
        generator_adversarial_loss(zeros, "wgan")


def test_mean_logit_averages_each_scale_then_the_scales():
    # Scale 0 has 4 patches of 0.5, scale 1 one patch of 1.5: each scale counts once, whatever its patches.
    logits = [torch.full((2, 1, 2, 2), 0.5, dtype=torch.bfloat16), torch.full((2, 1, 1, 1), 1.5)]
    score = mean_logit(logits)
    assert score.dtype == torch.float32 and score.item() == pytest.approx(1.0)
    with pytest.raises(ValueError, match="at least one scale"):
        mean_logit([])


def test_r1_penalty_is_the_squared_input_gradient_of_the_summed_scale_means():
    real = torch.randn(2, 3, 4, 4, requires_grad=True)
    # Scale 0: the channel mean per pixel (its patch mean has gradient 1/(C·H·W) everywhere); scale 1: twice the
    # image sum, one patch (gradient 2). ‖∇‖² per image: C·H·W·(2 + 1/(C·H·W))².
    logits = [real.mean(1, keepdim=True), 2 * real.sum((1, 2, 3)).view(2, 1, 1, 1)]
    n = 3 * 4 * 4
    assert r1_penalty(logits, real).item() == pytest.approx(n * (2 + 1 / n) ** 2)
    with pytest.raises(ValueError, match="require grad"):
        r1_penalty(logits, real.detach())
    conv = torch.nn.Conv2d(3, 1, 3)  # a discriminator: the penalty trains its weights (double backward)
    image = torch.randn(2, 3, 8, 8, requires_grad=True)
    r1_penalty([conv(image)], image).backward()
    assert conv.weight.grad is not None and conv.weight.grad.abs().sum() > 0


def test_texture_reality_targets_and_void_exclusion():
    uv, label = make_gbuffer(batch=2)
    texture = torch.rand(2, 3, 32, 32) * (label > 0).unsqueeze(1)
    projection = texture_projection(texture, label)
    x_a = SimInput(NUM_LABELS)(texture, uv, label)
    paper = texture_reality_target(projection, x_a, "projection")
    reference = texture_reality_target(projection, x_a, "sim_input")
    torch.testing.assert_close(paper, projection)
    torch.testing.assert_close(reference, x_a[:, :3])
    translation = torch.where((label == 0).unsqueeze(1), torch.rand(2, 3, 32, 32), paper)  # void differs
    assert texture_reality_loss(translation, paper, label).item() == pytest.approx(0.0, abs=1e-5)
    assert texture_reality_loss(translation, reference, label, data_range=4.0) > 0.1
    with pytest.raises(ValueError, match="target"):
        texture_reality_target(projection, x_a, "hint")


@pytest.mark.parametrize(("trains", "translation_learns", "texture_learns"),
                         [("both", True, True), ("texture", False, True), ("translator", True, False)])
def test_texture_reality_trains_the_chosen_side(trains: str, translation_learns: bool, texture_learns: bool):
    _, label = make_gbuffer(batch=2)
    translation = torch.rand(2, 3, 32, 32, requires_grad=True)
    projection = torch.rand(2, 3, 32, 32, requires_grad=True)
    loss = texture_reality_loss(translation, projection, label, trains=trains)
    torch.testing.assert_close(loss, texture_reality_loss(translation, projection, label))  # same value
    loss.backward()
    assert (translation.grad is not None and translation.grad.abs().sum() > 0) == translation_learns
    assert (projection.grad is not None and projection.grad.abs().sum() > 0) == texture_learns
    with pytest.raises(ValueError, match="trains"):
        texture_reality_loss(translation, projection, label, trains="neither")


def test_losses_are_finite_on_random_inputs():
    generator = torch.Generator().manual_seed(5)
    uv, label = make_gbuffer(batch=3)
    image, other = (torch.randn(3, 3, 32, 32, generator=generator) * 3 for _ in range(2))
    logits = [torch.randn(3, 1, 8, 8, generator=generator) * 10 for _ in range(3)]
    values = {
        "adversarial_g": generator_adversarial_loss(logits),
        "adversarial_d": discriminator_adversarial_loss(logits, logits[::-1]),
        "hinge_g": generator_adversarial_loss(logits, "hinge"),
        "hinge_d": discriminator_adversarial_loss(logits, logits, "hinge"),
        "recon": reconstruction_loss(image, other),
        "recon_l2": reconstruction_loss(image, other, "l2_ms_ssim"),
        "surface": surface_consistency_loss(image, uv, label, NUM_LABELS, GRID),
        "surface_normalised": surface_consistency_loss(
            image, uv, label, NUM_LABELS, GRID, color_normalization_eps=0.1
        ),
        "texture_reality": texture_reality_loss(image, other, label),
    }
    for name, value in values.items():
        assert value.ndim == 0 and value.dtype == torch.float32 and torch.isfinite(value), name
    assert values["surface"] > 0 and values["recon"] > 0


def translation_losses(texture):
    """Build a tiny TRITON generator step and return its unweighted loss terms."""
    torch.manual_seed(0)
    sim_input = SimInput(NUM_LABELS)
    gen_a = StyleFreeGenerator(6, base_channels=8, num_res_blocks=1, input_noise_std=0.0)
    gen_b = StyleFreeGenerator(3, base_channels=8, num_res_blocks=1, input_noise_std=0.0)
    dis_a = MultiScaleDiscriminator(6, base_channels=8, num_layers=2)
    dis_b = MultiScaleDiscriminator(3, base_channels=8, num_layers=2)
    uv, label = make_gbuffer(batch=2)
    x_b = torch.rand(2, 3, 32, 32) * 2 - 1

    sampled = texture(uv, label)
    x_a = sim_input(sampled, uv, label)
    content_a, content_b = gen_a.encode(x_a), gen_b.encode(x_b)
    x_ab, x_ba = gen_b.decode(content_a), gen_a.decode(content_b)
    projection = texture_projection(sampled, label)
    return {
        "adversarial": generator_adversarial_loss(dis_a(x_ba)) + generator_adversarial_loss(dis_b(x_ab)),
        "reconstruction": reconstruction_loss(gen_a.decode(content_a), x_a, data_range=4.0),
        "content": reconstruction_loss(gen_b.encode(x_ab), content_a, "l1"),
        "cycle": reconstruction_loss(gen_a.decode(gen_b.encode(x_ab)), x_a, data_range=4.0),
        "surface_consistency": surface_consistency_loss(x_ab, uv, label, NUM_LABELS, GRID),
        "texture_reality": texture_reality_loss(x_ab, texture_reality_target(projection, x_a), label),
    }


@pytest.mark.parametrize(
    "texture_kind",
    ["neural", "raster"],
)
def test_every_generator_loss_trains_the_texture(texture_kind):
    if texture_kind == "neural":
        texture = NeuralTexture(NUM_LABELS, num_frequencies=8, frequency_scale=2.0, hidden_channels=8)
    else:
        texture = RasterTexture(NUM_LABELS, resolution=16, num_mip_levels=2)
    parameters = list(texture.parameters())
    for name, loss in translation_losses(texture).items():
        gradients = torch.autograd.grad(loss, parameters, retain_graph=True)
        for parameter_index, gradient in enumerate(gradients):
            assert torch.isfinite(gradient).all(), (name, parameter_index)
            assert gradient.abs().sum() > 0, (name, parameter_index)
        assert math.isfinite(loss.item())
