"""The label-colour term: each label's mean colour in the translation against a colour the user gives."""

from __future__ import annotations

import math
import re
import shutil

import cv2
import numpy as np
import pytest
import torch
from hydra import compose, initialize_config_module

from triton_s2r.cli import main
from triton_s2r.data.datasets import BenchmarkDataset
from triton_s2r.data.label_colours import measure_label_colours
from triton_s2r.losses.label_colours import label_colour_loss, label_mean_colours
from triton_s2r.losses.settings import LossSettings
from triton_s2r.train import build


def test_mean_colours_and_counts_per_label() -> None:
    image = torch.zeros(1, 3, 2, 2)
    image[0, 0] = torch.tensor([[1.0, 0.0], [0.5, 0.0]])  # red: 1 and 0.5 on label 1, 0 on label 2
    label = torch.tensor([[[1, 2], [1, 2]]])
    means, counts = label_mean_colours(image, label, 4)
    assert counts.tolist() == [0.0, 2.0, 2.0, 0.0]
    assert means[1].tolist() == [0.75, 0.0, 0.0] and means[2].tolist() == [0.0, 0.0, 0.0]
    assert means[3].tolist() == [0.0, 0.0, 0.0]  # no pixel: zeros, not NaN


def test_the_loss_averages_the_labels_with_a_colour_and_pixels_only() -> None:
    image = torch.full((2, 3, 4, 4), 0.5, requires_grad=True)
    label = torch.ones(2, 4, 4, dtype=torch.long)
    label[:, :, 2:] = 2
    targets = torch.tensor([[0.0, 0.0, 0.0], [0.5, 0.5, 0.5], [1.0, 0.5, 0.5], [0.0, 0.0, 0.0]])
    has_target = torch.tensor([False, True, True, True])  # label 3 has a colour but no pixel
    loss = label_colour_loss(image, label, targets, has_target)
    # label 1 matches its colour (0), label 2 is 0.5 off in red only: (0.25 / 3) / 2 labels
    assert loss.item() == pytest.approx(0.25 / 3 / 2)
    loss.backward()
    assert image.grad is not None
    assert (image.grad[:, :, :, :2] == 0).all() and (image.grad[:, 0, :, 2:] < 0).all()
    assert (image.grad[:, 1:, :, 2:] == 0).all()
    none = torch.zeros(4, dtype=torch.bool)
    assert label_colour_loss(image, label, targets, none).item() == 0.0


def test_a_colour_may_be_a_hex_string_as_colour_pickers_give_it() -> None:
    settings = LossSettings(loss_weights={"label_colours": 1.0}, label_colours={"can": "#FF8000", "ball": [0, 0, 1]})
    assert settings.label_colours["can"] == (1.0, 128 / 255, 0.0)
    assert settings.label_colours["ball"] == (0.0, 0.0, 1.0)


@pytest.mark.parametrize("colour", [[1.0, 2.0, 0.0], [0.5, 0.5], "red", "#ff800", [math.nan, 0.0, 0.0]])
def test_a_colour_outside_rgb_in_0_1_is_refused_by_name(colour) -> None:
    message = r"loss\.label_colours\.can must be three numbers in \[0, 1\] \(r, g, b\) or a hex string '#rrggbb'"
    with pytest.raises(ValueError, match=message):
        LossSettings(loss_weights={}, label_colours={"can": colour})


def test_the_weight_without_colours_is_refused() -> None:
    with pytest.raises(ValueError, match="loss.label_colours names no label"):
        LossSettings(loss_weights={"label_colours": 1.0})
    settings = LossSettings(loss_weights={"label_colours": 1.0}, label_colours={"can": [0.8, 0.1, 0.1]})
    assert LossSettings(**settings.as_dict()) == settings


def test_the_step_pulls_the_named_labels_towards_their_colours(first_batch_terms) -> None:
    system, terms = first_batch_terms("loss.loss_weights.label_colours=1",
                                      "loss.label_colours={block_a:[1.0,0.0,0.0],table:'#0000ff'}")
    value = terms["label_colours"]
    assert math.isfinite(value.item()) and value.item() > 0
    targets, has_target = system._label_colours
    assert targets[1].tolist() == [0.0, 0.0, 1.0]  # the table, by hex string
    assert has_target.tolist() == [False, True] + [False] * 3 + [True] + [False] * 4  # the table and block_a
    value.backward()
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in system.model.generator_real.parameters())


def test_a_colour_for_a_label_the_data_lacks_names_the_labels(data_root) -> None:
    with initialize_config_module("triton_s2r.conf", version_base="1.3"):
        cfg = compose("train", overrides=["experiment=tiny", f"data.root={data_root}",
                                          "loss.loss_weights.label_colours=1", "loss.label_colours={mug:[1,0,0]}"])
    datamodule, system = build(cfg)
    with pytest.raises(ValueError, match=r"loss\.label_colours names 'mug'.*its labels are \[.*'table'"):
        system.attach_data(datamodule, torch.device("cpu"))


def test_measured_colours_are_each_labels_mean_over_its_pixels(data_root) -> None:
    dataset = BenchmarkDataset.open(data_root)
    colours, counts = measure_label_colours(data_root, split="train_real", every=2)
    sums: dict[str, np.ndarray] = {}
    pixels: dict[str, int] = {}
    for index in (0, 2):  # every second of the split's 4 frames
        label = dataset.uvl_frames("train_real")[index].label[0].numpy()
        photo = cv2.imread(str(dataset.frame_paths("train_real", "real")[index]))[..., ::-1] / 255.0
        for name in dataset.labels.names:
            mask = label == dataset.labels.id_of(name)
            sums[name] = sums.get(name, np.zeros(3)) + photo[mask].sum(axis=0)
            pixels[name] = pixels.get(name, 0) + int(mask.sum())
    shown = [name for name in dataset.labels.names if pixels[name]]
    assert list(colours) == shown and len(shown) >= 5
    for name in shown:
        assert counts[name] == pixels[name]
        assert colours[name] == pytest.approx(tuple(sums[name] / pixels[name]), abs=1e-6)


def test_the_printed_override_trains(data_root, capsys, first_batch_terms) -> None:
    assert main(["label-colours", str(data_root), "--labels", "block_a,can"]) == 0
    override = re.search(r"'(loss\.label_colours=\{.*\})'", capsys.readouterr().out)
    assert override is not None and re.fullmatch(r"loss\.label_colours=\{block_a:\[[\d.,]+\],can:\[[\d.,]+\]\}",
                                                 override.group(1))
    system, terms = first_batch_terms("loss.loss_weights.label_colours=1", override.group(1))
    colours = dict(system.losses.label_colours)
    assert list(colours) == ["block_a", "can"] and all(0 <= v <= 1 for c in colours.values() for v in c)
    assert math.isfinite(terms["label_colours"].item())


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"split": "train_sim"}, r"split 'train_sim' has no photos paired with UVL frames.*choose one of \['train_real'"),
    ({"names": ["cup"]}, r"'cup' is not a label of the dataset; its labels: table, "),
    ({"every": 0}, "every must be at least 1"),
])
def test_measuring_colours_where_it_cannot_says_why(data_root, kwargs, message) -> None:
    with pytest.raises(ValueError, match=message):
        measure_label_colours(data_root, **kwargs)


def test_photos_of_another_size_than_their_uvl_frames_are_refused(data_root, tmp_path) -> None:
    root = tmp_path / "tiny"
    shutil.copytree(data_root, root)
    for path in (root / "train_real" / "real").glob("*.png"):
        cv2.imwrite(str(path), cv2.resize(cv2.imread(str(path)), (16, 16)))
    with pytest.raises(ValueError, match=r"train_real/real holds 16x16 photos but the dataset's frames are 32x32"):
        measure_label_colours(root)
