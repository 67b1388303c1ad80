"""object_adversarial: windows around the objects in the translations and the photos, and D_O that learns them."""

from __future__ import annotations

import math

import pytest
import torch
from hydra import compose, initialize_config_module
from tiny_assets import metric_rows

from triton_s2r.cli import main
from triton_s2r.data.datasets import BenchmarkDataset
from triton_s2r.train import build
from triton_s2r.training.object_crops import crop_windows, draw_centres, photo_objectness, sim_objectness

TINY = ["experiment=tiny", "trainer.enable_progress_bar=false"]


def test_a_window_at_full_size_holds_the_images_own_pixels_and_stays_inside() -> None:
    image = torch.arange(2 * 3 * 16 * 20, dtype=torch.float32).reshape(2, 3, 16, 20)
    crops = crop_windows(image, torch.tensor([[8, 9], [0, 19]]), 6, 6)
    assert torch.equal(crops[0], image[0, :, 5:11, 6:12])  # rows and columns [c - 3, c + 3)
    assert torch.equal(crops[1], image[1, :, 0:6, 14:20])  # a corner's window is moved inside, not padded
    upsampled = crop_windows(image, torch.tensor([[8, 9], [8, 9]]), 6, 12)
    assert upsampled.shape == (2, 3, 12, 12)
    # The image is a linear ramp, so resampling keeps the window's mean.
    torch.testing.assert_close(upsampled[0].mean((1, 2)), image[0, :, 5:11, 6:12].mean((1, 2)))
    with pytest.raises(ValueError, match="lower system.object_crop_fraction"):
        crop_windows(image, torch.tensor([[8, 9], [8, 9]]), 18, 18)


def test_centres_fall_on_the_objects_and_an_image_without_any_gets_one_anywhere() -> None:
    label = torch.zeros(3, 64, 64, dtype=torch.long)
    label[0, 40:48, 10:18] = 5  # one object
    label[1, 4:12, 50:58], label[1, 30:38, 20:28] = 6, 7  # two objects: each drawn about half of the time
    label[1, 50:60, 0:40] = 1  # the table is not an object
    objectness = sim_objectness(label, torch.tensor([5, 6, 7]))
    generator = torch.Generator().manual_seed(0)
    drawn = torch.stack([draw_centres(objectness, 32, generator) for _ in range(200)])  # (200, 3, 2)
    rows, cols = drawn[..., 0], drawn[..., 1]
    on_object = label[torch.arange(3), rows, cols] > 1
    assert on_object[:, :2].float().mean() > 0.95  # a few just off an object's edge, its window still holds it
    near = torch.nn.functional.max_pool2d((label[:, None] > 1).float(), 9, stride=1, padding=4)[:, 0] > 0
    assert near[torch.arange(3), rows, cols][:, :2].all()
    second = (label[1][rows[:, 1], cols[:, 1]] == 7).float().mean()
    assert 0.3 < second < 0.7
    assert rows[:, 2].unique().numel() > 20  # no objects: drawn over the whole image


def test_in_a_photo_the_centre_is_where_its_render_misses_an_object_on_the_table() -> None:
    """The photo shows the render's table and robot plus an object the render lacks; grain elsewhere is ignored."""
    generator = torch.Generator().manual_seed(1)
    render = torch.rand(4, 3, 64, 64, generator=generator) * 2 - 1
    label = torch.zeros(4, 64, 64, dtype=torch.long)
    label[:, 24:, :] = 1  # the table
    label[:, 30:50, 40:52] = 2  # the robot
    photo = render + 0.1 * (torch.rand(4, 3, 64, 64, generator=generator) - 0.5)  # the table's grain, shading
    photo[:, :, 40:48, 8:16] = -1.0  # a dark object on the table
    photo[:, :, 30:50, 40:52] = 1.0  # the robot drawn otherwise than the render: not objectness
    photo[:, :, 0:20, :] = 1.0  # the room behind the table, unlike the render: not objectness either
    texture = render + 0.3 * (torch.rand(4, 3, 64, 64, generator=generator) - 0.5)  # flat, unshaded
    for explanations in ([render], [render, texture]):
        objectness = photo_objectness(photo, explanations, label, torch.tensor([1]))
        centres = draw_centres(objectness, 32, generator)
        assert ((centres[:, 0] >= 40) & (centres[:, 0] < 48) & (centres[:, 1] >= 8) & (centres[:, 1] < 16)).all()
    shadow = photo.clone()
    shadow[:, :, 24:32, 8:16] -= 0.5  # what the translation draws (a shadow) but the flat texture does not
    render_with_shadow = render.clone()
    render_with_shadow[:, :, 24:32, 8:16] -= 0.5
    both = photo_objectness(shadow, [render_with_shadow, texture], label, torch.tensor([1]))
    assert both[:, 24:32, 8:16].mean() < 0.5 * both[:, 40:48, 8:16].mean()


def test_the_step_crops_an_object_in_each_translation_and_d_o_is_one_of_the_discriminators(
        data_root) -> None:
    with initialize_config_module("triton_s2r.conf", version_base="1.3"):
        cfg = compose("train", overrides=[*TINY, f"data.root={data_root}", "loss.loss_weights.object_adversarial=1",
                                          "system.object_crop_fraction=0.5", "system.object_crop_size=32"])
    datamodule, system = build(cfg)
    system.attach_data(datamodule, torch.device("cpu"))
    views = system._robot_views
    assert views is not None and system.discriminator_object is not None
    names = BenchmarkDataset.open(data_root).labels.names
    assert sorted(names[int(i) - 1] for i in views.static_ids) == ["table"]
    assert {names[int(i) - 1] for i in views.object_ids} == set(names) - {"table", "robot_base", "robot_arm",
                                                                           "robot_hand"}
    batch = datamodule.transfer_batch_to_device(next(iter(datamodule.train_dataloader())), torch.device("cpu"), 0)
    torch.manual_seed(0)
    out = system._forward(system._inputs(batch))
    assert out.object_fake is not None and out.object_real is not None
    assert out.object_fake.shape == out.object_real.shape == (out.x_ab.shape[0], 3, 32, 32)
    terms = system._generator_terms(out)
    assert math.isfinite(terms["object_adversarial"].item())
    terms["object_adversarial"].backward()
    assert any(d is system.discriminator_object for d in system._discriminators())  # frozen in the generator phase
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in system.model.generator_sim.parameters())
    optimizer_d = system.configure_optimizers()[1]
    d_parameters = {id(p) for group in optimizer_d.param_groups for p in group["params"]}
    assert {id(p) for p in system.discriminator_object.parameters()} <= d_parameters


def test_training_with_object_adversarial_logs_the_term(data_root, tmp_path) -> None:
    out = tmp_path / "run"
    assert main(["train", *TINY, "logger=csv", f"data.root={data_root}", f"hydra.run.dir={out}", "trainer.max_epochs=1",
                 "data.steps_per_epoch=2", "trainer.log_every_n_steps=1", "loss.loss_weights.object_adversarial=1",
                 "system.object_crop_fraction=0.5", "system.object_crop_size=32"]) == 0
    values = [float(row["train/object_adversarial"]) for row in metric_rows(out) if row.get("train/object_adversarial")]
    assert len(values) == 2 and all(math.isfinite(v) and v > 0 for v in values)
