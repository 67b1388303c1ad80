"""Hidden "true" appearance of the benchmark's real domain: procedural textures and materials per label.

The real domain (``triton_s2r.tabletop.real``) is rendered with these; the model never sees them, and
the texture-recovery metric compares what it learns against ``Appearance.label_textures``.
Each label gets a material kind from its name and its objects' names (``material_kinds``), and
``make_appearance`` draws that kind's textures (``triton_s2r.tabletop.materials``) from one seed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

import cv2
import numpy as np

from triton_s2r.render.scene import Scene
from triton_s2r.tabletop.materials import (
    Material,
    alphabet_block_material,
    ball_material,
    box_atlas_orientations,
    can_material,
    painted_material,
    wood_material,
)

#: Material kinds and the words in label or object names that select them (first match wins).
KIND_KEYWORDS: dict[str, tuple[str, ...]] = {
    "wood": ("table", "desk", "wood", "floor"),
    "alphabet_block": ("block", "cube", "letter", "jenga"),
    "ball": ("ball", "sphere"),
    "can": ("can", "cylinder", "bottle", "tin", "cup"),
}
#: Kind of every label whose names match none of ``KIND_KEYWORDS`` (robot links and the like).
DEFAULT_KIND = "painted"
KINDS = (*KIND_KEYWORDS, DEFAULT_KIND)


@dataclass(frozen=True)
class Appearance:
    """The hidden appearance of every label of a scene.

    Attributes:
        materials: label id (1..K) -> material. Objects that share a label share its material, so the
            per-label texture a model learns has one right answer.
        seed: the seed it was generated from.
    """

    materials: Mapping[int, Material]
    seed: int
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    def material(self, label: int) -> Material:
        """The material of label id ``label``."""
        try:
            return self.materials[label]
        except KeyError:
            raise KeyError(f"appearance has no material for label id {label} "
                           f"(it has {sorted(self.materials)})") from None

    def label_textures(self, resolution: int) -> np.ndarray:
        """Albedo of every label resampled to the model's texture layout.

        Args:
            resolution: R, texels per side.

        Returns:
            (K, 3, R, R) float32 in [0, 1] with **rows indexed by u and columns by v** and texel centres
            at (i + 0.5) / R, as in ``triton_s2r.models.texture_space``; label l is entry l - 1.
        """
        key = ("label_textures", resolution)
        if key not in self._cache:
            out = []
            for label in sorted(self.materials):
                img = cv2.resize(self.materials[label].albedo, (resolution, resolution), interpolation=cv2.INTER_AREA)
                # image[row, col] holds (u, v) = (col, 1 - row): flip rows so index grows with v, then swap axes.
                out.append(np.ascontiguousarray(img[::-1].transpose(1, 0, 2).transpose(2, 0, 1)))
            self._cache[key] = np.clip(np.stack(out), 0.0, 1.0).astype(np.float32)
        return self._cache[key]


def material_kinds(scene: Scene, overrides: Mapping[str, str] | None = None) -> dict[int, str]:
    """Pick a material kind per label from the label's name and the names of its objects.

    Args:
        scene: the scene whose labels get materials.
        overrides: label name -> kind, taking precedence over the keyword match.

    Returns:
        label id -> kind, one of ``KINDS``.
    """
    overrides = dict(overrides or {})
    unknown = {k for k in overrides.values() if k not in KINDS}
    if unknown:
        raise ValueError(f"unknown material kinds {sorted(unknown)}; choose from {KINDS}")
    kinds = {}
    for label, name in enumerate(scene.labels.names, start=1):
        if name in overrides:
            kinds[label] = overrides[name]
            continue
        # Match whole words (prefixes of them), so "robot_hand" does not become a can through "hand".
        text = " ".join([name, *(o.name for o in scene.objects if o.label == label)]).lower()
        words = [w for w in re.split(r"[^a-z0-9]+", text) if w]
        kinds[label] = next((k for k, keys in KIND_KEYWORDS.items()
                             if any(w.startswith(key) for w in words for key in keys)), DEFAULT_KIND)
    return kinds


def make_appearance(scene: Scene, *, seed: int = 0, resolution: int = 512,
                    kinds: Mapping[str, str] | None = None) -> Appearance:
    """Generate the hidden appearance of every label of ``scene``, deterministically for ``seed``.

    Args:
        scene: the scene; its label names (and object names) choose each label's material kind.
        seed: any integer; the same seed gives bit-identical textures.
        resolution: side of every texture image in pixels (square).
        kinds: optional label name -> kind overrides (see ``material_kinds``).

    Returns:
        The appearance, one material per label id 1..K.
    """
    materials = {}
    for label, kind in material_kinds(scene, kinds).items():
        # One independent stream per label: adding a label does not change the others' textures.
        rng = np.random.default_rng([seed, label])
        if kind == "alphabet_block":
            mesh = next(o.mesh for o in scene.objects if o.label == label)
            materials[label] = alphabet_block_material(rng, resolution, box_atlas_orientations(mesh))
        else:
            materials[label] = _MAKERS[kind](rng, resolution)
    return Appearance(materials, seed)


_MAKERS = {
    "wood": wood_material,
    "alphabet_block": alphabet_block_material,
    "ball": ball_material,
    "can": can_material,
    "painted": painted_material,
}
