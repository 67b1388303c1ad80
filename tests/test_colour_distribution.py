"""The object-colour term: sliced Wasserstein distances between masked sets of pixel colours."""

from __future__ import annotations

import math

import pytest
import torch

from triton_s2r.losses.colour_distribution import colour_distribution_loss, masked_quantiles, top_fraction

AXES = torch.eye(3)


def two_colour_image(first: list[float], second: list[float], side: int = 8) -> torch.Tensor:
    """(1, 3, side, side): the left half ``first``, the right half ``second``."""
    image = torch.empty(1, 3, side, side)
    image[..., : side // 2] = torch.tensor(first)[:, None, None]
    image[..., side // 2:] = torch.tensor(second)[:, None, None]
    return image


def test_quantiles_use_only_the_selected_values() -> None:
    values = torch.tensor([[5.0, 0.0, 1.0, 9.0, 2.0, 3.0]])
    mask = torch.tensor([False, True, True, False, True, True])
    assert masked_quantiles(values, mask, 4).tolist() == [[0.0, 1.0, 2.0, 3.0]]
    assert masked_quantiles(values, mask, 2).tolist() == [[1.0, 3.0]]
    assert masked_quantiles(values, torch.zeros(6, dtype=torch.bool), 2).tolist() == [[0.0, 0.0]]


def test_a_shift_of_colour_costs_its_size_and_equal_sets_nothing() -> None:
    real = two_colour_image([0.8, -0.6, -0.6], [-0.6, -0.6, 0.8])
    mask = torch.ones(1, 8, 8, dtype=torch.bool)
    assert colour_distribution_loss(real.clone(), mask, real, mask, AXES).item() == 0.0
    shift = torch.tensor([0.3, -0.15, 0.0])
    loss = colour_distribution_loss(real + shift[:, None, None], mask, real, mask, AXES)
    assert loss.item() == pytest.approx(shift.abs().mean().item(), abs=1e-6)


def test_one_mean_colour_is_charged_where_the_photos_show_two() -> None:
    # The collapse the term is for: objects drawn in the mean of the photos' red and blue objects.
    real = two_colour_image([0.8, -0.6, -0.6], [-0.6, -0.6, 0.8])
    mean = real.mean((2, 3), keepdim=True).expand_as(real)  # (0.1, -0.6, 0.1) everywhere
    mask = torch.ones(1, 8, 8, dtype=torch.bool)
    swapped = two_colour_image([-0.6, -0.6, 0.8], [0.8, -0.6, -0.6])  # the same colours elsewhere: a set, not a map
    assert colour_distribution_loss(swapped, mask, real, mask, AXES).item() == 0.0
    assert colour_distribution_loss(mean, mask, real, mask, AXES).item() == pytest.approx(0.7 * 2 / 3)


def test_only_the_selected_pixels_count_and_get_gradient() -> None:
    real = two_colour_image([0.5, 0.5, 0.5], [-1.0, -1.0, -1.0], side=4)
    real_mask = torch.zeros(1, 4, 4, dtype=torch.bool)
    real_mask[..., :2] = True  # only the left half, 0.5
    fake = torch.zeros(2, 3, 6, 6, requires_grad=True)
    fake_mask = torch.zeros(2, 6, 6, dtype=torch.bool)
    fake_mask[1, 2:4, 2:4] = True
    loss = colour_distribution_loss(fake, fake_mask, real, real_mask, AXES)
    assert loss.item() == pytest.approx(0.5)
    loss.backward()
    assert fake.grad is not None
    assert (fake.grad[:, :, ~fake_mask[0] & ~fake_mask[1]] == 0).all() and (fake.grad[1, :, 2:4, 2:4] < 0).all()
    empty = torch.zeros_like(fake_mask)
    assert colour_distribution_loss(fake, empty, real, real_mask, AXES).item() == 0.0


def test_top_fraction_keeps_the_highest_positive_scores() -> None:
    score = torch.tensor([[0.0, 0.9, 0.1], [0.5, 0.0, 0.7]])
    assert top_fraction(score, torch.tensor(2 / 6)).tolist() == [[False, True, False], [False, False, True]]
    assert top_fraction(score, torch.tensor(1.0)).sum().item() == 4  # zeros are never picked


@pytest.mark.parametrize("shade_objects", [False, True])
def test_the_step_charges_the_translated_objects_colours_and_trains_what_draws_them(first_batch_terms,
                                                                                    shade_objects: bool) -> None:
    """G_B draws the objects by default; shaded (system.shade_objects=true) their textures draw them too."""
    system, terms = first_batch_terms("loss.loss_weights.object_colours=1", f"system.shade_objects={shade_objects}")
    value = terms["object_colours"]
    assert math.isfinite(value.item()) and value.item() > 0
    value.backward()

    def trained(network: torch.nn.Module) -> bool:
        return any(p.grad is not None and p.grad.abs().sum() > 0 for p in network.parameters())

    assert trained(system.model.generator_real)
    assert trained(system.model.texture) == shade_objects
