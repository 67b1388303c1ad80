"""What the consistency measures charge a video that is consistent by construction, and how much blur lowers it.

A benchmark dataset's hidden albedo mapped onto a video sequence's surfaces is a video whose every
surface point keeps its colour from frame to frame: rendered at ``--supersample`` times the frame size and
area-pooled (antialiased as a camera, or the path tracer, would), it flickers nowhere. Whatever ℓUC (as training
computes it: clips of two neighbouring frames, the default grid) and the warp error still charge it is their floor
for a surface with that much detail; whatever a Gaussian blur of it saves is what they reward a translation for
drawing that surface smoother than it is. The real frames (noise and changing light besides) are the last row.

Every measure is the mean over the dataset's sequences (of those where the label shows).

Usage (from the repository root; CPU, embree; about a minute per 24-frame sequence)::

    python -m benchmarks.consistency_floor --data outputs/data/small256 [--supersample 4] [--sigmas 1 2]

Prints one markdown table per measure: rows the videos, columns the labels.
"""

from __future__ import annotations

import argparse
import datetime
import platform
import warnings
from collections.abc import Sequence

import cv2
import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from triton_s2r.data.datasets import BenchmarkDataset, DatasetError, load_states
from triton_s2r.evaluation.metrics import warp_error_by_label
from triton_s2r.evaluation.texture_recovery import read_hidden_albedo
from triton_s2r.losses.surface_consistency import surface_consistency_loss
from triton_s2r.models.texture_space import sample_label_textures
from triton_s2r.render.gbuffer import GBuffer
from triton_s2r.render.rasterizer import make_rasterizer
from triton_s2r.render.scene import Scene, load_scene

#: Texels per side of the hidden albedo as sampled (finer than any surface's footprint on a 256 px frame).
ALBEDO_RESOLUTION = 1024


def albedo_video(dataset: BenchmarkDataset, sequence: str, albedo: Tensor, scene: Scene,
                 supersample: int) -> tuple[Tensor, GBuffer]:
    """The hidden albedo on a sequence's surfaces, antialiased, and the sequence's G-buffer at frame size.

    Args:
        dataset: a benchmark dataset.
        sequence: one of its sequence splits, e.g. ``"sequences/seq_000"``.
        albedo: (K, 3, R, R) the hidden albedo (``read_hidden_albedo``).
        scene: the dataset's baked scene.
        supersample: render factor before the area pooling.

    Returns:
        ``(frames, gbuffer)``: (T, 3, H, W) float32 in [0, 1] (void black), and the G-buffer of the UVL files.
    """
    height, width = dataset.resolution
    state = load_states(dataset.root / sequence / "states.npz", width, height)
    fine = make_rasterizer("embree").render(scene, state, supersample=supersample)
    texture = sample_label_textures(albedo, fine.uv, fine.label) * (fine.label > 0).unsqueeze(1)
    uvl = dataset.uvl_frames(sequence)
    return F.avg_pool2d(texture, supersample), GBuffer.cat([uvl[i] for i in range(len(uvl))])


def blurred(frames: Tensor, sigma: float) -> Tensor:
    """Each frame (T, 3, H, W) blurred with a Gaussian of ``sigma`` pixels."""
    size = 2 * round(3 * sigma) + 1
    images = [cv2.GaussianBlur(f.permute(1, 2, 0).numpy(), (size, size), sigma) for f in frames]
    return torch.from_numpy(np.stack(images)).permute(0, 3, 1, 2)


def consistency_by_label(frames: Tensor, gbuffer: GBuffer, num_labels: int, grid_size: int,
                         blur_sigma: float) -> list[float]:
    """ℓUC of frames (T, 3, H, W) in [0, 1] over each label's pixels alone, clips of two frames as training.

    NaN for a label that the sequence does not show.
    """
    values = []
    for label in range(1, num_labels + 1):
        if not (gbuffer.label == label).any():
            values.append(float("nan"))
            continue
        alone = torch.where(gbuffer.label == label, gbuffer.label, torch.zeros_like(gbuffer.label))
        values.append(surface_consistency_loss(frames * 2 - 1, gbuffer.uv, alone, num_labels, grid_size,
                                               sim_clip_frames=2, blur_sigma=blur_sigma).item())
    return values


def table(title: str, names: Sequence[str], rows: dict[str, list[float]]) -> str:
    lines = [f"{title} (x1000)", "", "| video | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    lines += [f"| {name} | " + " | ".join(f"{1000 * v:.1f}" for v in values) + " |" for name, values in rows.items()]
    return "\n".join(lines)


def measure(dataset: BenchmarkDataset, supersample: int, sigmas: Sequence[float], grid_size: int,
            loss_blurs: Sequence[float]) -> dict[str, dict[str, list[float]]]:
    """The tables: title -> video -> each label's measure (K values, NaN where no sequence shows the label).

    Videos: the albedo antialiased, blurred by each of ``sigmas``, and the real frames; tables: ℓUC with each of
    ``loss_blurs`` (its ``blur_sigma``), then the warp error.
    """
    sequences = sorted(s for s in dataset.splits if s.startswith("sequences/"))
    if not sequences:
        raise DatasetError(f"{dataset.root}: no video sequences; build it with `triton-s2r make-dataset`")
    albedo = read_hidden_albedo(dataset, ALBEDO_RESOLUTION)
    if albedo is None:
        raise DatasetError(f"{dataset.root}: no hidden albedo; rebuild it with `triton-s2r make-dataset`")
    scene = load_scene(dataset.root / "assets" / "scene.yaml")
    count = dataset.labels.num_labels
    titles = {blur: f"ℓUC per label (clips of 2, grid {grid_size}, blur within labels σ={blur:g} px)"
              for blur in loss_blurs}
    per_sequence: dict[str, dict[str, list[list[float]]]] = {}
    for sequence in sequences:
        frames, gbuffer = albedo_video(dataset, sequence, albedo, scene, supersample)
        photos = dataset.photos(sequence)
        videos = {"albedo, antialiased": frames}
        videos |= {f"albedo, blurred σ={s:g} px": blurred(frames, s) for s in sigmas}
        videos["real frames"] = torch.stack([photos[i] for i in range(len(photos))])
        for name, video in videos.items():
            for blur, title in titles.items():
                per_sequence.setdefault(title, {}).setdefault(name, []).append(
                    consistency_by_label(video, gbuffer, count, grid_size, blur))
            per_sequence.setdefault("Warp error per label", {}).setdefault(name, []).append(
                warp_error_by_label(video, gbuffer, count).tolist())
    return {title: _mean(rows) for title, rows in per_sequence.items()}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True, help="a benchmark dataset with hidden albedo and sequences")
    parser.add_argument("--supersample", type=int, default=4, help="render factor before area pooling")
    parser.add_argument("--sigmas", type=float, nargs="+", default=[1.0, 2.0], help="blurs to compare, pixels")
    parser.add_argument("--grid-size", type=int, default=128, help="ℓUC's D (loss.surface_grid_size)")
    parser.add_argument("--loss-blur", type=float, nargs="+", default=[0.0],
                        help="ℓUC's blur within labels (loss.surface_blur_sigma), a table each")
    args = parser.parse_args(argv)

    dataset = BenchmarkDataset.open(args.data)
    tables = measure(dataset, args.supersample, args.sigmas, args.grid_size, args.loss_blur)
    print(f"- card: {platform.processor() or platform.machine()} (CPU)\n"
          f"- command: `python -m benchmarks.consistency_floor --data {args.data} --supersample {args.supersample} "
          f"--sigmas {' '.join(f'{s:g}' for s in args.sigmas)} --grid-size {args.grid_size} "
          f"--loss-blur {' '.join(f'{s:g}' for s in args.loss_blur)}`\n"
          f"- date: {datetime.date.today()}\n")
    print("\n\n".join(table(title, list(dataset.labels.names), rows) for title, rows in tables.items()))


def _mean(per_sequence: dict[str, list[list[float]]]) -> dict[str, list[float]]:
    """Per video, each label's mean over the sequences that show it (NaN where none does)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # numpy's "mean of empty slice" for such a label
        return {name: np.nanmean(np.array(rows, dtype=float), axis=0).tolist() for name, rows in per_sequence.items()}


if __name__ == "__main__":
    main()
