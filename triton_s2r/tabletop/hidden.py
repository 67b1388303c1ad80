"""The benchmark's hidden ground truth kept in the dataset for evaluation only: every label's true albedo.

``make-dataset`` writes ``DIR/hidden/albedo/<label>.png`` (8-bit RGB, one per label, the albedo the "real"
frames were path traced with) and lists it in ``dataset.yaml`` under ``hidden``, a key the training data
module never looks at; ``tests/test_eval.py`` trains with the folder gone to prove that training never
reads it. ``triton-s2r eval`` compares the learned textures with it (``triton_s2r.evaluation.texture_recovery``).

Image layout, as ``triton_s2r.tabletop.materials`` draws it and ``export-textures`` writes learned
textures: row 0 is the top (v = 1), column 0 is u = 0; pixel (row, col) sits at
``(u, v) = ((col + 0.5) / W, 1 - (row + 0.5) / H)``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from triton_s2r.render.scene import LabelTable
from triton_s2r.utils.files import write_image

if TYPE_CHECKING:
    from triton_s2r.tabletop.appearance import Appearance

#: Manifest entry (``dataset.yaml`` key ``hidden``): where the albedo images are, relative to the dataset root.
HIDDEN_MANIFEST = {
    "albedo": "hidden/albedo/{label}.png",
    "layout": "8-bit RGB, u to the right, v up (row 0 is v = 1), as export-textures writes",
    "read_by": "triton-s2r eval only (texture recovery); training never reads it",
}


def albedo_path(root: str | os.PathLike, label: str) -> Path:
    """Where the hidden albedo of label ``label`` is, in the dataset at ``root``."""
    return Path(root) / HIDDEN_MANIFEST["albedo"].format(label=label)


def write_hidden_albedo(root: str | os.PathLike, labels: LabelTable, appearance: Appearance) -> list[Path]:
    """Write every label's hidden albedo as ``hidden/albedo/<label>.png`` (atomically; present files kept).

    Args:
        root: the dataset folder.
        labels: the scene's label table; label id l is ``labels.names[l - 1]``.
        appearance: the hidden appearance the real frames are rendered with (one material per label id).

    Returns:
        The image paths, in label id order.
    """
    paths = []
    for label, name in enumerate(labels.names, start=1):
        path = albedo_path(root, name)
        if not path.is_file():
            path.parent.mkdir(parents=True, exist_ok=True)
            albedo = appearance.material(label).albedo  # (R, R, 3) float32 in [0, 1], row 0 = v 1
            write_image(path, np.round(np.clip(albedo, 0, 1) * 255).astype(np.uint8))
        paths.append(path)
    return paths
