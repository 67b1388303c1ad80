"""Pictures for docs/results.md: test frames translated by several runs side by side, and their textures.

    python -m benchmarks.pictures --data DIR --out docs/results/NAME --runs RUN [RUN ...] [--frames 0 3 6]

Writes ``NAME_frames.jpg``: a row per test frame; columns: the UVL input, the real frame, then each run's
translation in the order given. When a run has a texture (every method but ``no_texture`` and ``oracle``), also
``NAME_textures.jpg``: a row per textured run, each label's baked texture side by side (labels 1..K), oriented
as ``triton-s2r export`` writes it.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from triton_s2r.data.datasets import BenchmarkDataset
from triton_s2r.inference.export import texture_image
from triton_s2r.inference.translator import Translator
from triton_s2r.inference.video import to_uint8
from triton_s2r.render.gbuffer import GBuffer
from triton_s2r.render.preview import preview_image
from triton_s2r.utils.files import write_image

#: The test frames pictured unless told otherwise, a row each.
FRAMES = (0, 3, 6)


def to_pictures(images: torch.Tensor) -> np.ndarray:
    """(B, 3, H, W) floats in [0, 1] -> (B, H, W, 3) uint8."""
    return to_uint8(images.permute(0, 2, 3, 1).float().cpu().numpy())


def side_by_side(columns: Sequence[np.ndarray]) -> np.ndarray:
    """Columns of (B, H, W, 3) images -> one (B*H, len(columns)*W, 3) picture: a row per image of the batch."""
    return np.concatenate([np.concatenate(list(column), axis=0) for column in columns], axis=1)


def make_pictures(data: Path, out: Path, runs: Sequence[Path], frames: Sequence[int], device: str = "auto",
                  texture_side: int = 96) -> list[Path]:
    """Write the pictures (see the module docstring) for ``out`` = folder/NAME; returns the files written."""
    dataset = BenchmarkDataset.open(data)
    uvl, photos = dataset.uvl_frames("test"), dataset.photos("test")
    bad = [i for i in frames if not 0 <= i < len(uvl)]
    if bad:
        raise ValueError(f"{data}: the test split has {len(uvl)} frames; --frames {bad} are outside 0..{len(uvl) - 1}")
    gbuffer = GBuffer.cat([uvl[i] for i in frames])
    columns = [preview_image(gbuffer, dataset.labels.num_labels), to_pictures(torch.stack([photos[i] for i in frames]))]
    texture_rows = []
    for run in runs:
        translator = Translator.from_run_dir(run, device=device)
        columns.append(to_pictures(translator(gbuffer).translation))
        if translator.model.sim_input.texture_multiplier:
            # Each label's texture as `triton-s2r export` writes it (u to the right, v up), labels left to right.
            baked = translator.bake_textures(texture_side)  # (K, C, R, R)
            texture_rows.append(np.concatenate([texture_image(t) for t in baked], axis=1))  # (R, K*R, 3)
    out.parent.mkdir(parents=True, exist_ok=True)
    written = [out.with_name(out.name + "_frames.jpg")]
    write_image(written[0], side_by_side(columns))
    if texture_rows:
        written.append(out.with_name(out.name + "_textures.jpg"))
        write_image(written[1], np.concatenate(texture_rows, axis=0))
    return written


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True, help="the benchmark dataset the runs trained on")
    parser.add_argument("--out", type=Path, required=True, help="folder/NAME: writes NAME_frames.jpg (and _textures)")
    parser.add_argument("--runs", type=Path, nargs="+", required=True, help="run directories, one column each")
    parser.add_argument("--frames", type=int, nargs="+", default=list(FRAMES), help="test frame indices, one row each")
    parser.add_argument("--device", default="auto", help="auto (CUDA when present), cuda or cpu")
    args = parser.parse_args(argv)
    for path in make_pictures(args.data, args.out, args.runs, args.frames, args.device):
        print(path)


if __name__ == "__main__":
    main()
