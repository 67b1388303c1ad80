"""HaarPSI (Reisenhofer et al. 2018): the properties the paper defines it by, and why eval reports it."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
import torch

from triton_s2r.evaluation.haarpsi import haarpsi
from triton_s2r.evaluation.metrics import psnr
from triton_s2r.tabletop.materials import alphabet_block_material


@pytest.fixture(scope="module")
def texture() -> torch.Tensor:
    """(1, 3, 96, 96) toy-block faces with letters: edges at every scale; kept in [0.05, 0.85] (room for an offset)."""
    albedo = alphabet_block_material(np.random.default_rng(0), 96).albedo
    return torch.from_numpy(albedo).permute(2, 0, 1)[None].clamp(0.05, 0.85)


def blurred(image: torch.Tensor, sigma: float) -> torch.Tensor:
    out = cv2.GaussianBlur(image[0].permute(1, 2, 0).numpy(), (0, 0), sigma, borderType=cv2.BORDER_REPLICATE)
    return torch.from_numpy(out).permute(2, 0, 1)[None]


def test_identical_images_score_one_and_others_less(texture) -> None:
    assert haarpsi(texture, texture).item() == pytest.approx(1.0, abs=1e-6)
    noisy = (texture + 0.1 * torch.randn(texture.shape, generator=torch.Generator().manual_seed(0))).clamp(0, 1)
    flat = texture.mean(dim=(2, 3), keepdim=True).expand_as(texture)
    scores = haarpsi(torch.cat([noisy, flat]), texture.expand(2, -1, -1, -1), reduction="none")
    assert scores.shape == (2,) and ((scores > 0) & (scores < 0.95)).all(), scores
    assert scores[1] < 0.2  # a flat image has none of the texture's structure


def test_symmetric(texture) -> None:
    other = blurred(texture, 1.5)
    assert haarpsi(other, texture).item() == pytest.approx(haarpsi(texture, other).item(), abs=1e-6)


def test_blur_lowers_the_score_steadily(texture) -> None:
    scores = [haarpsi(blurred(texture, sigma), texture).item() for sigma in (0.5, 1.0, 2.0, 4.0)]
    assert all(a > b for a, b in zip(scores, scores[1:], strict=False)), scores
    assert scores[-1] < 0.5


def test_blur_cannot_fool_it_as_it_fools_psnr(texture) -> None:
    """A grey offset leaves every edge in place: HaarPSI 1 at a lower PSNR than a blur that HaarPSI punishes."""
    offset = texture + 0.12  # the I and Q rows of YIQ sum to 0, and Haar high-passes ignore constants
    blur = blurred(texture, 1.0)
    assert psnr(offset, texture) < psnr(blur, texture)
    assert haarpsi(offset, texture).item() == pytest.approx(1.0, abs=1e-6)
    assert haarpsi(blur, texture).item() < 0.9


def test_mask_ignores_pixels_outside_it(texture) -> None:
    mask = torch.zeros(1, 96, 96, dtype=torch.bool)
    mask[:, 16:64, 24:80] = True
    changed = texture.clone()
    changed[:, :, ~mask[0]] = torch.rand(int((~mask).sum()) * 3, generator=torch.Generator().manual_seed(1)).view(3, -1)
    assert haarpsi(changed, texture, mask=mask).item() == pytest.approx(1.0, abs=1e-6)
    assert haarpsi(changed, texture).item() < 0.9
    # Inside the mask a blur counts; with an all-True mask the masked score is the whole-frame one.
    blur = blurred(texture, 1.5)
    assert haarpsi(blur, texture, mask=mask).item() < 0.9
    everything = torch.ones(1, 96, 96, dtype=torch.bool)
    assert haarpsi(blur, texture, mask=everything).item() == pytest.approx(haarpsi(blur, texture).item(), abs=1e-6)


def test_errors_name_the_problem(texture) -> None:
    with pytest.raises(ValueError, match="RGB"):
        haarpsi(texture[:, :1], texture[:, :1])
    with pytest.raises(ValueError, match="mask is empty in images \\[0\\]"):
        haarpsi(texture, texture, mask=torch.zeros(1, 96, 96, dtype=torch.bool))
    flat = torch.full((1, 3, 8, 8), 0.5)
    with pytest.raises(ValueError, match="flat"):
        haarpsi(flat, flat)
