"""Texture recovery on synthetic textures: perfect, colour-transformed, blurred and constant learned textures."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
import torch

from triton_s2r.evaluation.texture_recovery import affine_colour_fit, seen_texels, texture_psnr
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
