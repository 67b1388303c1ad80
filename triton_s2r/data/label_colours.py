"""Each label's mean colour in a dataset's photos, for the optional label-colour term (docs/method.md §4.11).

The term takes the colours a person knows the objects to have. Where some photos come with their UVL frames
(the benchmark's paired splits, or a few of your own photos rendered from their states), this reads them off
exactly: each label's mean colour over its pixels in every photo, as the term compares them.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import torch

from triton_s2r.data.datasets import BenchmarkDataset, DatasetError
from triton_s2r.losses.label_colours import label_mean_colours

RGB = tuple[float, float, float]


def measure_label_colours(root: str | os.PathLike, *, split: str = "train_real", every: int = 1,
                          names: Sequence[str] | None = None) -> tuple[dict[str, RGB], dict[str, int]]:
    """Each label's mean colour over its pixels in the photos of a paired split.

    Args:
        root: a dataset folder (``dataset.yaml``, data/README.md).
        split: a split with both photos and UVL frames of the same states.
        every: use every N-th frame of the split (1: all).
        names: the labels to measure (None: every label that the photos show).

    Returns:
        Label name -> its mean colour (r, g, b) in [0, 1] (sRGB, as the photos), and label name -> its pixel
        count over the frames used.

    Raises:
        DatasetError: the split is not paired, its photos and UVL frames differ in size, or a named label is not a
            label of the dataset or never shows in the frames used.
        ValueError: ``every`` below 1.
    """
    if every < 1:
        raise ValueError(f"every must be at least 1, got {every}")
    dataset = BenchmarkDataset.open(root)
    if not dataset.is_paired(split):
        paired = [s for s in dataset.splits if dataset.is_paired(s)]
        raise DatasetError(f"{dataset.root}: split {split!r} has no photos paired with UVL frames; label colours "
                           f"are read where both show the same states: choose one of {paired or 'none'} (a split "
                           "of your own photos with the UVL frames rendered from their states also works)")
    labels = dataset.labels
    wanted = list(labels.names) if names is None else list(names)
    unknown = [name for name in wanted if name not in labels.names]
    if unknown:
        raise DatasetError(f"{dataset.root}: {', '.join(map(repr, unknown))} is not a label of the dataset; its "
                           f"labels: {', '.join(labels.names)}")
    uvl, photos = dataset.uvl_frames(split), dataset.photos(split)  # the UVL frames are checked at their size
    if photos.size != dataset.resolution:
        raise DatasetError(f"{photos.folder} holds {photos.size[0]}x{photos.size[1]} photos but the dataset's frames "
                           f"are {dataset.resolution[0]}x{dataset.resolution[1]}: paired frames must be pixel-aligned; "
                           "rebuild the split")
    sums = torch.zeros(labels.num_labels + 1, 3, dtype=torch.float64)
    counts = torch.zeros(labels.num_labels + 1, dtype=torch.float64)
    for index in range(0, len(uvl), every):
        label, photo = uvl[index].label, photos[index]  # (1, H, W), (3, H, W)
        means, frame_counts = label_mean_colours(photo[None], label, labels.num_labels + 1)
        sums += means.double() * frame_counts.double()[:, None]
        counts += frame_counts.double()
    ids = {name: labels.id_of(name) for name in wanted}
    absent = [name for name, i in ids.items() if counts[i] == 0]
    if names is not None and absent:
        raise DatasetError(f"{dataset.root}: {', '.join(map(repr, absent))} never shows in split "
                           f"{split!r} (one frame in {every}); choose another split or a smaller --every")
    shown = {name: i for name, i in ids.items() if counts[i] > 0}
    colours: dict[str, RGB] = {}
    for name, i in shown.items():
        r, g, b = (sums[i] / counts[i]).tolist()
        colours[name] = (r, g, b)
    return colours, {name: int(counts[i]) for name, i in shown.items()}


def label_colours_override(colours: dict[str, RGB], decimals: int = 2) -> str:
    """The Hydra override that hands ``colours`` to training: ``loss.label_colours={can:[0.57,0.22,0.25],...}``."""
    entries = ",".join(f"{name}:[{','.join(f'{v:.{decimals}f}' for v in colour)}]" for name, colour in colours.items())
    return f"loss.label_colours={{{entries}}}"
