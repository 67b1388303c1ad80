"""``triton-s2r downstream``: the paper's pose experiment on the benchmark, the test that blur cannot pass.

Examples::

    triton-s2r downstream outputs/data/small --train-on real --out outputs/downstream/real.json   # the ceiling
    triton-s2r downstream outputs/data/small --train-on sim --out outputs/downstream/sim.json     # raw UVL
    triton-s2r downstream outputs/data/small --train-on outputs/runs/demo --out outputs/downstream/demo.json

TRITON (paper §4.3, the xArm pose imitation) trains a network on translated simulation frames alone and
tests it on real frames: a translator is only as good as what a policy learns from its frames. Here a small
CNN (``PoseNet``, random initialisation, no downloaded weights) regresses the arm's 7 joint angles and the
objects' table positions (x, y) from one image. Training images come from ``--train-on``:

* ``real``: the ``train_real`` real frames (the ceiling: no domain gap);
* ``sim``: the raw UVL visualisation of the same states (``render.preview.preview_image``: red u, green v,
  blue label; the floor);
* a run directory: the run's translations of the same states' UVL frames (``train_real`` has UVL frames of
  its states, so their poses are known); ``texture:RUN_DIR`` uses the run's texture projection instead;
* a frames folder from any translator, holding ``train_real/NNNNNN.png`` (its translations of
  ``train_real``'s UVL frames, named like them).

Every source trains on the same states, so sources compare fairly; ``--train-frames`` larger than
``train_real`` adds ``train_sim`` states for the sources that can show them (sim and runs). Testing is always
on the real frames of the paired ``test`` split (and of the video sequences, reported separately).

Measures: ``joint_error_deg`` is the paper's: per frame the root of the summed squared joint errors in
degrees, averaged over frames; ``object_position_error_cm`` is the mean over frames and objects of the
distance between predicted and true table positions. Deterministic for a seed on one device.

Two references come with them. ``_mean_pose``: always predicting the training mean; a source must beat it
to have taught anything. ``_train_states``: the network on the *real* frames of the ``train_real`` states it
was trained on; no generalisation to new states is needed there, only the step from the training images to
reality (for ``real`` it is the training error), so it separates sources even on datasets too small for the
pose to generalise (the ``tiny`` preset's 16 states).
"""

from __future__ import annotations

import datetime
import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
import yaml
from torch import Tensor, nn

from triton_s2r.data.datasets import BenchmarkDataset, DatasetError, read_photo
from triton_s2r.evaluation.evaluate import frame_file
from triton_s2r.inference.translator import Translator, resolve_device
from triton_s2r.render.gbuffer import GBuffer
from triton_s2r.render.preview import preview_image
from triton_s2r.runs.run_dir import CONFIG, RunDir

#: Sources named by a word; anything else is a run directory or a frames folder.
NAMED_SOURCES = ("real", "sim")
#: Defaults: a couple of minutes on the CPU for the ``small`` preset (200 training images).
STEPS = 1000
BATCH_SIZE = 32
INPUT_SIZE = 64
TEXTURE_PREFIX = "texture:"


@dataclass(frozen=True)
class PoseTargets:
    """What the network regresses, for N frames.

    Attributes:
        joints: (N, 7) float32 arm joint angles in radians.
        object_xy: (N, O, 2) float32 table positions (world x, y) of the O objects, in metres.
    """

    joints: Tensor
    object_xy: Tensor

    def flat(self) -> Tensor:
        """(N, 7 + 2 O) float32, the regression vector."""
        return torch.cat([self.joints, self.object_xy.flatten(1)], dim=1)


def object_indices(dataset: BenchmarkDataset) -> list[int]:
    """Positions in ``states.npz``'s objects of the movable objects: neither the table nor robot links."""
    spec = yaml.safe_load(dataset.scene_file.read_text())
    return [i for i, entry in enumerate(spec["objects"])
            if entry["label"] != "table" and not entry["label"].startswith("robot")]


def pose_targets(dataset: BenchmarkDataset, split: str) -> PoseTargets:
    """Joint angles and object table positions of every frame of ``split`` (its ``states.npz``)."""
    path = dataset.root / split / "states.npz"
    if not path.is_file():
        raise DatasetError(f"{path}: states file not found; rerun `triton-s2r make-dataset` on this folder")
    with np.load(path) as data:
        if "joints" not in data:
            raise DatasetError(f"{path}: has no 'joints' array; rebuild the dataset with `triton-s2r make-dataset`")
        joints = torch.from_numpy(data["joints"]).float()
        poses = torch.from_numpy(data["object_poses"]).float()  # (N, objects, 4, 4) world_from_object
    return PoseTargets(joints, poses[:, object_indices(dataset), :2, 3])


class PoseNet(nn.Module):
    """A small CNN: four stride-2 convolutions (GroupNorm, ReLU), then two linear layers.

    The last feature map is flattened rather than pooled, so the network keeps where things are (object
    positions) and not only what is there.

    Args:
        outputs: size of the regression vector (7 joints + 2 per object).
        input_size: S, square input side in pixels (a multiple of 16).
        channels: feature channels of the four convolutions.
    """

    def __init__(self, outputs: int, input_size: int = 64, channels: tuple[int, ...] = (16, 32, 64, 64)) -> None:
        super().__init__()
        if input_size % 16:
            raise ValueError(f"input_size must be a multiple of 16, got {input_size}")
        layers, previous = [], 3
        for width in channels:
            layers += [nn.Conv2d(previous, width, 3, stride=2, padding=1), nn.GroupNorm(8, width), nn.ReLU()]
            previous = width
        self.features = nn.Sequential(*layers)
        side = input_size // 16
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(previous * side * side, 256), nn.ReLU(),
                                  nn.Linear(256, outputs))

    def forward(self, image: Tensor) -> Tensor:
        """(B, 3, S, S) in [0, 1] -> (B, outputs) standardised targets."""
        return self.head(self.features(image * 2 - 1))


def _resize(images: Tensor, size: int) -> Tensor:
    """(N, 3, H, W) -> (N, 3, size, size), area-like (antialiased bilinear)."""
    if images.shape[-2:] == (size, size):
        return images
    return F.interpolate(images, size=(size, size), mode="bilinear", antialias=True, align_corners=False)


def _uvl_batches(dataset: BenchmarkDataset, split: str, count: int, batch_size: int = 16):
    frames = dataset.uvl_frames(split)
    for start in range(0, count, batch_size):
        yield GBuffer.cat([frames[i] for i in range(start, min(start + batch_size, count))])


def source_images(source: str, dataset: BenchmarkDataset, split: str, count: int, size: int,
                  device: str = "auto") -> Tensor:
    """The first ``count`` training images of ``split`` as seen by ``source``, (count, 3, size, size) in [0, 1]."""
    if source == "real":
        return _resize(torch.stack([read_photo(p) for p in dataset.frame_paths(split, "real")[:count]]), size)
    if source == "sim":
        previews = [torch.from_numpy(preview_image(g, dataset.labels.num_labels)).permute(0, 3, 1, 2).float() / 255
                    for g in _uvl_batches(dataset, split, count)]
        return _resize(torch.cat(previews), size)
    path = Path(source.removeprefix(TEXTURE_PREFIX))
    if RunDir(path).config_path.is_file():
        translator = Translator.from_run_dir(path, device=device)
        if translator.num_labels != dataset.labels.num_labels:
            raise ValueError(f"run {path} has {translator.num_labels} labels but {dataset.root} has "
                             f"{dataset.labels.num_labels}: use a run trained on this benchmark")
        field = "texture" if source.startswith(TEXTURE_PREFIX) else "translation"
        images = [getattr(translator(g), field).cpu() for g in _uvl_batches(dataset, split, count)]
        return _resize(torch.cat(images), size)
    if (path / split).is_dir() and not source.startswith(TEXTURE_PREFIX):
        files = [frame_file(path / split, i) for i in range(count)]
        if None in files:
            raise DatasetError(f"{path / split}: frame {files.index(None):06d}.png missing; a frames folder holds one "
                               f"image per UVL frame of {dataset.root / split / 'uvl'}, with the same names")
        return _resize(torch.stack([read_photo(f) for f in files if f is not None]), size)  # none is, after the check
    raise FileNotFoundError(f"--train-on {source!r}: not one of {', '.join(NAMED_SOURCES)}, a run directory "
                            f"({CONFIG} inside; texture:RUN_DIR for its texture projection) or a frames folder "
                            f"({split}/000000.png, ...)")


def training_set(source: str, dataset: BenchmarkDataset, train_frames: int | None, size: int,
                 device: str) -> tuple[Tensor, PoseTargets]:
    """Images and targets: ``train_real``'s states first, then ``train_sim``'s for sources that can show them."""
    available = dataset.splits["train_real"]["frames"]
    wanted = available if train_frames is None else train_frames
    if wanted < 1:
        raise ValueError(f"--train-frames must be >= 1, got {wanted}")
    parts = [("train_real", min(wanted, available))]
    if wanted > available:
        extra = dataset.splits["train_sim"]["frames"] if source != "real" else 0
        if wanted > available + extra:
            raise ValueError(f"--train-frames {wanted}: {dataset.root} has {available} train_real states"
                             + (f" and {extra} train_sim states" if extra else " with real frames")
                             + "; ask for fewer or build a larger dataset (make-dataset --frames)")
        parts.append(("train_sim", wanted - available))
    images, joints, xy = [], [], []
    for split, count in parts:
        images.append(source_images(source, dataset, split, count, size, device))
        targets = pose_targets(dataset, split)
        joints.append(targets.joints[:count])
        xy.append(targets.object_xy[:count])
    return torch.cat(images), PoseTargets(torch.cat(joints), torch.cat(xy))


def pose_errors(predicted: PoseTargets, true: PoseTargets) -> tuple[float, float]:
    """(joint_error_deg, object_position_error_cm), see the module docstring."""
    joint = torch.rad2deg(predicted.joints - true.joints).pow(2).sum(dim=1).sqrt().mean()
    position = (predicted.object_xy - true.object_xy).norm(dim=-1).mean() * 100
    return float(joint), float(position)


def train_pose_net(images: Tensor, targets: Tensor, *, steps: int, batch_size: int, seed: int,
                   device: torch.device, learning_rate: float = 1e-3) -> nn.Module:
    """Fit ``PoseNet`` to standardised ``targets`` (N, D) from ``images`` (N, 3, S, S) with Adam; seeded."""
    torch.manual_seed(seed)  # the network is initialised on the CPU, so the same on every device
    model = PoseNet(targets.shape[1], images.shape[-1]).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, steps)
    generator = torch.Generator().manual_seed(seed)
    images, targets = images.to(device), targets.to(device)
    model.train()
    # cuDNN may pick non-deterministic convolution kernels; ask for deterministic ones while this trains.
    flags = torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark
    torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = True, False
    try:
        for _ in range(steps):
            batch = torch.randint(0, images.shape[0], (batch_size,), generator=generator).to(device)
            loss = F.mse_loss(model(images[batch]), targets[batch])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            schedule.step()
    finally:
        torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = flags
    return model.eval()


@torch.no_grad()
def _predict(model: nn.Module, images: Tensor, mean: Tensor, std: Tensor, objects: int,
             device: torch.device) -> PoseTargets:
    out = torch.cat([model(images[i:i + 64].to(device)).cpu() for i in range(0, images.shape[0], 64)]) * std + mean
    return PoseTargets(out[:, :7], out[:, 7:].reshape(-1, objects, 2))


def downstream(
    dataset_dir: str | os.PathLike,
    train_on: str,
    *,
    seed: int = 0,
    train_frames: int | None = None,
    steps: int = STEPS,
    batch_size: int = BATCH_SIZE,
    input_size: int = INPUT_SIZE,
    device: str = "auto",
) -> dict:
    """Train the pose network on ``train_on``'s images and test it on the real frames.

    Args:
        dataset_dir: benchmark dataset with ``train_real`` and a paired ``test`` split.
        train_on: ``real``, ``sim``, a run directory, ``texture:RUN_DIR`` or a frames folder (module docstring).
        seed: network initialisation and batch order.
        train_frames: training images (default: as many as ``train_real`` has).
        steps: optimiser steps.
        batch_size: images per step.
        input_size: images are resized to this square side (a multiple of 16).
        device: ``auto`` (CUDA if available), ``cpu``, ``cuda``, ``cuda:N``; also translates for a run.

    Returns:
        ``joint_error_deg``, ``object_position_error_cm`` (test split), the same with ``_sequences`` (the video
        sequences; None without them), ``_train_states`` and ``_mean_pose`` (module docstring), ``train_on``,
        ``n_train``, ``n_test``, ``n_test_sequences``, ``seed``, ``steps``, the dataset, ``device`` and date.
    """
    dataset = BenchmarkDataset.open(dataset_dir)
    if not dataset.is_paired("train_real") or not dataset.is_paired("test"):
        raise DatasetError(f"{dataset.root}: downstream needs the paired splits train_real and test (UVL and real "
                           f"frames); build the dataset with real frames (make-dataset without --no-real)")
    torch_device = resolve_device(device)
    images, train = training_set(train_on, dataset, train_frames, input_size, device)
    flat = train.flat()
    mean = flat.mean(0)
    std = flat.std(0).clamp(min=1e-6) if flat.shape[0] > 1 else torch.ones(flat.shape[1])
    model = train_pose_net(images, (flat - mean) / std, steps=steps, batch_size=batch_size, seed=seed,
                           device=torch_device)
    objects = train.object_xy.shape[1]

    result: dict = {}
    sequences = sorted(s for s in dataset.splits if s.startswith("sequences/") and dataset.is_paired(s))
    for key, splits in (("", ["test"]), ("_sequences", sequences)):
        if not splits:
            result.update({f"joint_error_deg{key}": None, f"object_position_error_cm{key}": None})
            result[f"n_test{key}"] = 0
            continue
        test_images = torch.cat([source_images("real", dataset, s, dataset.splits[s]["frames"], input_size)
                                 for s in splits])
        true = [pose_targets(dataset, s) for s in splits]
        true = PoseTargets(torch.cat([t.joints for t in true]), torch.cat([t.object_xy for t in true]))
        joint, position = pose_errors(_predict(model, test_images, mean, std, objects, torch_device), true)
        result.update({f"joint_error_deg{key}": joint, f"object_position_error_cm{key}": position,
                       f"n_test{key}": int(test_images.shape[0])})
    n_real_states = min(images.shape[0], dataset.splits["train_real"]["frames"])
    seen_real = source_images("real", dataset, "train_real", n_real_states, input_size)
    seen_true = pose_targets(dataset, "train_real")
    seen_true = PoseTargets(seen_true.joints[:n_real_states], seen_true.object_xy[:n_real_states])
    joint, position = pose_errors(_predict(model, seen_real, mean, std, objects, torch_device), seen_true)
    result.update({"joint_error_deg_train_states": joint, "object_position_error_cm_train_states": position})
    # The trivial baseline: always predicting the training mean; a source must beat it to have taught anything.
    test_true = pose_targets(dataset, "test")
    mean_pose = PoseTargets(mean[:7].expand_as(test_true.joints),
                            mean[7:].reshape(1, objects, 2).expand_as(test_true.object_xy))
    joint, position = pose_errors(mean_pose, test_true)
    result.update({"joint_error_deg_mean_pose": joint, "object_position_error_cm_mean_pose": position})
    result.update({
        "train_on": train_on,
        "n_train": int(images.shape[0]),
        "seed": seed,
        "steps": steps,
        "batch_size": batch_size,
        "input_size": input_size,
        "n_objects": objects,
        "dataset": str(Path(dataset_dir).resolve()),
        "device": str(torch_device),
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
    })
    if not all(math.isfinite(result[k]) for k in ("joint_error_deg", "object_position_error_cm")):
        raise RuntimeError(f"downstream training on {train_on!r} diverged (non-finite errors); try fewer --steps")
    return result
