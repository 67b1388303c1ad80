"""Render UVL frames of a scene to files, with 8-bit previews for looking at them."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from tqdm import tqdm

from triton_s2r.render.gbuffer import GBuffer
from triton_s2r.render.rasterizer import UVLRasterizer
from triton_s2r.render.scene import FrameState, Scene
from triton_s2r.render.uvl import gbuffer_to_uvl, write_uvl
from triton_s2r.utils.files import write_image


def preview_image(gbuffer: GBuffer, num_labels: int) -> np.ndarray:
    """8-bit RGB pictures of G-buffers: red = u, green = v, blue = label id / K; void is black.

    Returns:
        (B, H, W, 3) uint8.
    """
    rgb = np.concatenate([gbuffer.uv.cpu().numpy(), gbuffer.label.cpu().numpy()[:, None] / max(num_labels, 1)], 1)
    return np.round(rgb.transpose(0, 2, 3, 1) * 255).astype(np.uint8)


def render_to_files(
    rasterizer: UVLRasterizer,
    scene: Scene,
    state: FrameState,
    out_dir: str | os.PathLike,
    *,
    batch_size: int = 8,
    uvl_format: str = "png",
) -> list[Path]:
    """Render every frame of ``state`` and write UVL files plus previews.

    Writes ``uvl/frame_NNNNNN.<uvl_format>`` (reference TRITON UVL format: 16-bit PNG or float EXR) and
    ``preview/frame_NNNNNN.png`` (8-bit, see ``preview_image``) under ``out_dir``. Each file is written
    atomically; frames whose UVL file already exists are skipped, so an interrupted run resumes.

    Returns:
        Paths of the UVL files, in frame order.
    """
    if uvl_format not in ("png", "exr"):
        raise ValueError(f"uvl_format must be 'png' or 'exr', got {uvl_format!r}")
    out = Path(out_dir)
    (out / "uvl").mkdir(parents=True, exist_ok=True)
    (out / "preview").mkdir(parents=True, exist_ok=True)
    paths = [out / "uvl" / f"frame_{i:06d}.{uvl_format}" for i in range(state.batch_size)]
    todo = [i for i, p in enumerate(paths) if not p.exists()]
    progress = tqdm(total=len(paths), initial=len(paths) - len(todo), desc=f"render ({rasterizer.name})", unit="frame")
    with progress as bar:
        for start in range(0, len(todo), batch_size):
            idx = todo[start:start + batch_size]
            gbuffer = rasterizer.render(scene, state.select(idx))
            uvl = gbuffer_to_uvl(gbuffer, scene.labels).cpu()
            previews = preview_image(gbuffer, scene.labels.num_labels)
            for j, i in enumerate(idx):
                preview_path = out / "preview" / paths[i].with_suffix(".png").name
                write_image(preview_path, previews[j])
                write_uvl(paths[i], uvl[j])  # last: its existence marks the frame done
            bar.update(len(idx))
    return paths

