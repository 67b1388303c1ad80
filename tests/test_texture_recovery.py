"""Texture recovery on synthetic textures: perfect, colour-transformed, blurred and constant learned textures."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
import torch

from triton_s2r.evaluation.texture_recovery import (
    affine_colour_fit,
    seen_texels,
    shuffled_colour_level,
    texture_colour_psnr,
    texture_psnr,
)
from triton_s2r.render.gbuffer import GBuffer
from triton_s2r.tabletop.materials import alphabet_block_material, can_material

R = 64


@pytest.fixture(scope="module")
def hidden() -> torch.Tensor:
    """(2, 3, R, R) two benchmark albedos with letters and print: detail at every scale."""
    rng = np.random.default_rng(0)
    images = [alphabet_block_material(rng, R).albedo, can_material(rng, R).albedo]
    return torch.stack([torch.from_numpy(image).permute(2, 0, 1) for image in images])


def everywhere() -> torch.Tensor:
    return torch.ones(2, R, R, dtype=torch.bool)


def test_perfect_and_affinely_recoloured_textures_score_the_cap(hidden) -> None:
    assert texture_psnr(hidden, hidden, everywhere()).tolist() == [100.0, 100.0]
    # A white-balance, exposure and channel-mixing change is forgiven by the per-label affine fit.
    mix = torch.tensor([[0.6, 0.1, 0.0], [0.05, 0.5, 0.1], [0.0, 0.2, 0.4]])
    recoloured = (torch.einsum("ij,kjhw->kihw", mix, hidden) + 0.1).clamp(0, 1)
    assert (texture_psnr(recoloured, hidden, everywhere()) > 60).all()


def test_blurred_and_constant_textures_score_low(hidden) -> None:
    blurred = torch.stack([torch.from_numpy(cv2.GaussianBlur(t.permute(1, 2, 0).numpy(), (0, 0), 2.0)).permute(2, 0, 1)
                           for t in hidden])
    constant = hidden.mean(dim=(2, 3), keepdim=True).expand_as(hidden).contiguous()
    blur_score = texture_psnr(blurred, hidden, everywhere())
    constant_score = texture_psnr(constant, hidden, everywhere())
    assert (constant_score < 15).all(), constant_score
    assert (constant_score < blur_score).all() and (blur_score < 30).all(), blur_score


def test_only_seen_texels_count(hidden) -> None:
    """Texels no pixel shows may hold anything; a label no pixel shows has no score."""
    seen = torch.zeros(2, R, R, dtype=torch.bool)
    seen[0, : R // 2] = True  # the first half of label 1's rows (u < 0.5)
    learned = hidden.clone()
    learned[0, :, R // 2:] = 0.3
    scores = texture_psnr(learned, hidden, seen)
    assert scores[0] == 100.0 and scores[1].isnan()


def test_seen_texels_follow_the_uvs() -> None:
    uv = torch.tensor([[0.1, 0.9], [0.99, 0.0]]).T.reshape(1, 2, 1, 2)  # two pixels: (u, v) = (0.1, 0.9), (0.99, 0)
    label = torch.tensor([[[2, 0]]])  # the second pixel is void
    seen = seen_texels(GBuffer(uv=uv, label=label), num_labels=2, resolution=10)
    assert seen.shape == (2, 10, 10) and seen.sum() == 1 and seen[1, 1, 9]  # label 2, row u*10, column v*10


def test_affine_fit_of_a_constant_is_the_mean() -> None:
    target = torch.rand(50, 3, generator=torch.Generator().manual_seed(0))
    fitted = affine_colour_fit(torch.full((50, 3), 0.4), target)
    torch.testing.assert_close(fitted, target.mean(0).expand(50, 3), atol=1e-5, rtol=0)


def test_the_shared_colour_fit_asks_each_label_for_its_own_colour() -> None:
    """Six labels of distinct colours, faintly patterned: colours swapped between labels are forgiven per label only."""
    generator = torch.Generator().manual_seed(0)
    hidden = (torch.rand(6, 3, 1, 1, generator=generator) * 0.6 + 0.2
              + torch.rand(6, 3, R, R, generator=generator) * 0.1)
    seen = torch.ones(6, R, R, dtype=torch.bool)
    seen[0, 1:] = False  # a label of one row weighs as much as the others in the shared fit
    means = torch.stack([hidden[k].permute(1, 2, 0)[seen[k]].mean(0) for k in range(6)])[:, :, None, None]
    means = means.expand_as(hidden).contiguous()
    swapped = means.roll(1, dims=0)
    constant_level = texture_psnr(means, hidden, seen)
    torch.testing.assert_close(texture_psnr(swapped, hidden, seen), constant_level)
    torch.testing.assert_close(texture_colour_psnr(means, hidden, seen), constant_level, atol=1e-3, rtol=0)
    assert texture_colour_psnr(swapped, hidden, seen).mean() < constant_level.mean() - 3
    # Chance, the true colours on random labels, stays well below each label's own colour.
    chance = shuffled_colour_level(hidden, seen)
    assert chance < constant_level.mean() - 2
    assert chance == shuffled_colour_level(hidden, seen)  # seeded
    assert texture_colour_psnr(torch.zeros_like(hidden), hidden, seen).mean() < constant_level.mean() - 3
    # One global white balance and exposure change is still forgiven.
    mix = torch.tensor([[0.6, 0.1, 0.0], [0.05, 0.5, 0.1], [0.0, 0.2, 0.4]])
    recoloured = (torch.einsum("ij,kjhw->kihw", mix, hidden) + 0.1).clamp(0, 1)
    assert (texture_colour_psnr(recoloured, hidden, seen) > 60).all()
    assert texture_colour_psnr(hidden, hidden, seen).tolist() == [100.0] * 6
