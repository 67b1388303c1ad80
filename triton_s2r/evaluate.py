"""``triton-s2r eval``: fidelity and flicker of a trained run on a benchmark dataset, with no downloaded weights.

Fidelity on the paired split (translation vs the path-traced real frame of the same state): PSNR and SSIM,
over whole frames and over objects and robot only (no table, no void: the paper's "masked" columns), and
PSNR per label (``psnr_by_label``, void included: where fidelity is won or lost).
Consistency on every video sequence: surface consistency (per-texel colour spread across the frames that
see the texel, in UV space) and warp error (colour change between consecutive frames at pixels that see
the same surface point, from the exact label and UV correspondence), each also for the real frames: reality's
own level from lighting and shading, the level to reach. See ``triton_s2r.metrics`` for the definitions.

FID, KID and LPIPS need pretrained network weights, which nothing here downloads; they are reported as
absent (``null``) with the reason.
"""

from __future__ import annotations

import datetime
import json
import os
from pathlib import Path

import torch
from torch import Tensor
from tqdm import tqdm

from triton_s2r import metrics
from triton_s2r.datasets import BenchmarkDataset
from triton_s2r.render.gbuffer import GBuffer
from triton_s2r.translator import Translator
from triton_s2r.utils.files import atomic_write

ABSENT = "needs pretrained network weights, which triton_s2r never downloads; not computed"


def _translate(translator: Translator, dataset: BenchmarkDataset, split: str, batch_size: int,
               progress: bool) -> tuple[Tensor, GBuffer, Tensor]:
    """Translations (N, 3, H, W) in [0, 1], G-buffers and real frames (N, 3, H, W) of a paired split (CPU)."""
    frames, photos = dataset.uvl_frames(split), dataset.photos(split)
    translations, gbuffers, reals = [], [], []
    for start in tqdm(range(0, len(frames), batch_size), desc=f"eval {split}", disable=not progress):
        idx = range(start, min(start + batch_size, len(frames)))
        gbuffer = GBuffer.cat([frames[i] for i in idx])
        translations.append(translator(gbuffer).translation.cpu())
        gbuffers.append(gbuffer)
        reals.append(torch.stack([photos[i] for i in idx]))
    return torch.cat(translations), GBuffer.cat(gbuffers), torch.cat(reals)


def _psnr_by_label(translation: Tensor, real: Tensor, label: Tensor, names: list[str]) -> dict[str, float | None]:
    """PSNR over each label's pixels (id 0: void), averaged over the frames that show it; None if none does."""
    result: dict[str, float | None] = {}
    for i, name in enumerate(names):
        mask = label == i
        shown = mask.flatten(1).any(1)
        result[name] = float(metrics.psnr(translation[shown], real[shown], mask=mask[shown])) if shown.any() else None
    return result


def _mean_by_label(values: list[Tensor], names: list[str]) -> dict[str, float | None]:
    """Per label name: the mean over sequences of (K,) values, NaN entries skipped; None if all are NaN."""
    if not values:
        return {name: None for name in names}
    stacked = torch.stack(values)  # (S, K)
    seen = ~stacked.isnan()
    mean = stacked.nan_to_num().sum(0) / seen.sum(0)
    return {name: float(m) if s else None for name, m, s in zip(names, mean, seen.any(0), strict=True)}


def evaluate(
    run_dir: str | os.PathLike,
    dataset_dir: str | os.PathLike,
    *,
    split: str = "test",
    checkpoint: str | None = None,
    device: str = "auto",
    batch_size: int = 16,
    grid_size: int = 128,
    progress: bool = True,
) -> dict:
    """Compute the metrics of a run on a dataset.

    Args:
        run_dir: run written by ``triton-s2r train``.
        dataset_dir: benchmark dataset (its ``split`` must hold both uvl/ and real/ frames).
        split: the paired split for PSNR/SSIM.
        checkpoint: checkpoint name or file (default: the last).
        device: ``auto``, ``cpu``, ``cuda``, ``cuda:N``.
        batch_size: frames per model call.
        grid_size: texels per side of the UV grids of the consistency metrics.
        progress: show progress bars.

    Returns:
        The metrics (floats) and where they came from; see the module docstring.
    """
    translator = Translator.from_run_dir(run_dir, checkpoint=checkpoint, device=device)
    dataset = BenchmarkDataset.open(dataset_dir)
    if not dataset.is_paired(split):
        raise ValueError(f"{dataset.root}: split {split!r} is not a paired split (uvl/ and real/); "
                         f"paired splits: {[s for s in dataset.splits if dataset.is_paired(s)]}")
    if dataset.labels.num_labels != translator.num_labels:
        raise ValueError(f"{dataset.root} has {dataset.labels.num_labels} labels but the run's model "
                         f"{translator.num_labels}: evaluate on the dataset the run was trained for")
    exclude = [dataset.labels.id_of("table")] if "table" in dataset.labels.names else []

    translation, gbuffer, real = _translate(translator, dataset, split, batch_size, progress)
    objects = metrics.object_mask(gbuffer.label, exclude=exclude)
    keep = objects.flatten(1).any(1)  # frames with no object pixel have no masked score
    result = {
        "psnr": float(metrics.psnr(translation, real)),
        "ssim": float(metrics.ssim(translation, real)),
        "psnr_masked": float(metrics.psnr(translation[keep], real[keep], mask=objects[keep])),
        "ssim_masked": float(metrics.ssim(translation[keep], real[keep], mask=objects[keep])),
        "psnr_by_label": _psnr_by_label(translation, real, gbuffer.label, ["void", *dataset.labels.names]),
        "n_frames": int(translation.shape[0]),
    }

    sequences = sorted(s for s in dataset.splits if s.startswith("sequences/"))
    consistency = {"surface_consistency": [], "surface_consistency_real": [], "warp_error": [], "warp_error_real": []}
    warp_by_label = {"": [], "_real": []}  # per sequence: (K,) with NaN where a label is not counted
    n_sequence_frames = 0
    for name in sequences:
        frames, g, photos = _translate(translator, dataset, name, batch_size, progress)
        n_sequence_frames += frames.shape[0]
        for key, images in (("", frames), ("_real", photos)):
            consistency[f"surface_consistency{key}"].append(
                float(metrics.surface_consistency(images, g, translator.num_labels, grid_size)))
            consistency[f"warp_error{key}"].append(float(metrics.warp_error(images, g, grid_size)))
            warp_by_label[key].append(metrics.warp_error_by_label(images, g, translator.num_labels, grid_size))
    result.update({k: sum(v) / len(v) if v else None for k, v in consistency.items()})
    for key, values in warp_by_label.items():
        result[f"warp_error_by_label{key}"] = _mean_by_label(values, dataset.labels.names)
    result.update({
        "n_sequences": len(sequences),
        "n_sequence_frames": n_sequence_frames,
        "fid": None, "kid": None, "lpips": None,
        "absent": {"fid": ABSENT, "kid": ABSENT, "lpips": ABSENT},
        "dataset": str(Path(dataset_dir).resolve()),
        "split": split,
        "run_dir": str(Path(run_dir).resolve()),
        "checkpoint": checkpoint or "last",
        "grid_size": grid_size,
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
    })
    return result


def write_metrics(result: dict, out: str | os.PathLike) -> Path:
    """Write the metrics as JSON, atomically."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(out) as tmp:
        tmp.write_text(json.dumps(result, indent=2) + "\n")
    return out
