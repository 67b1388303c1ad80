"""Hidden "true" appearance of the benchmark's real domain: procedural textures and materials per label.

The real domain (``triton_s2r.tabletop.real``) is rendered with these; the model never sees them, and
the texture-recovery metric compares what it learns against ``Appearance.label_textures``.
Everything is generated with numpy and OpenCV from one seed (no files, no downloads):

* ``wood``: planked table top with growth rings, fibres and knots;
* ``alphabet_block``: painted wooden blocks with a big letter per face, laid out on the 3 x 2 face
  atlas of ``triton_s2r.render.primitives.box``;
* ``ball``: gores, polka dots and a wavy equator band on a latitude-longitude sphere;
* ``can``: a printed label with stripes and text between two brushed-metal rims;
* ``painted``: robot plastic (white, greys) with tape marks, hazard stripes, stickers and scuffs.

Image convention: textures are (H, W, 3) float32 images in [0, 1] whose **row 0 is the top (v = 1)**
and column 0 is u = 0, as in OBJ files and image editors: texel (row, col) sits at
``(u, v) = ((col + 0.5) / W, 1 - (row + 0.5) / H)``.
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping
from dataclasses import dataclass, field

import cv2
import numpy as np

from triton_s2r.render.mesh import Mesh
from triton_s2r.render.scene import Scene

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

# Saturated paint colours of toy blocks and balls (linear-ish RGB in [0, 1]).
_TOY_PALETTE = np.array([
    [0.80, 0.10, 0.08], [0.05, 0.30, 0.75], [0.95, 0.75, 0.05], [0.10, 0.55, 0.20], [0.95, 0.45, 0.05],
    [0.55, 0.15, 0.60], [0.05, 0.60, 0.65], [0.90, 0.30, 0.45], [0.95, 0.93, 0.85], [0.15, 0.15, 0.18],
], dtype=np.float32)
_TAPE_PALETTE = np.array([
    [0.95, 0.78, 0.05], [0.08, 0.30, 0.80], [0.80, 0.10, 0.08], [0.10, 0.55, 0.25], [0.95, 0.45, 0.05],
    [0.08, 0.08, 0.09],
], dtype=np.float32)
_ROBOT_BASES = np.array([[0.86, 0.86, 0.84], [0.64, 0.65, 0.67], [0.93, 0.92, 0.88], [0.22, 0.22, 0.24]],
                        dtype=np.float32)
@dataclass(frozen=True)
class Material:
    """One label's surface: texture maps plus scalar BSDF parameters (Mitsuba ``principled``).

    Attributes:
        kind: one of ``KINDS``.
        albedo: (H, W, 3) float32 base colour in [0, 1], row 0 = v 1 (see the module docstring).
        roughness: (H, W) float32 GGX roughness in [0.05, 1].
        metallic: (H, W) float32 in [0, 1].
        specular: scalar specular reflectance (0.5 = index of refraction 1.5).
        clearcoat: scalar clear-coat weight in [0, 1] (varnish, glossy paint).
    """

    kind: str
    albedo: np.ndarray
    roughness: np.ndarray
    metallic: np.ndarray
    specular: float = 0.5
    clearcoat: float = 0.0


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


# --------------------------------------------------------------------------------------------- noise


def fractal_noise(rng: np.random.Generator, shape: tuple[int, int], base_cells: int = 4, octaves: int = 4,
                  stretch: tuple[float, float] = (1.0, 1.0)) -> np.ndarray:
    """Smooth value noise summed over octaves (fBm), roughly zero-mean, about unit amplitude.

    Args:
        rng: random generator.
        shape: (H, W) of the output.
        base_cells: lattice cells across the image at the coarsest octave.
        octaves: number of octaves, each with twice the frequency and half the amplitude.
        stretch: (rows, cols) lattice-density factors; (4, 0.25) gives streaks along the columns (u).

    Returns:
        (H, W) float32.
    """
    h, w = shape
    out = np.zeros(shape, np.float32)
    amplitude, total = 1.0, 0.0
    for octave in range(octaves):
        cells = base_cells * 2**octave
        grid = rng.standard_normal((max(2, int(cells * stretch[0])) + 1, max(2, int(cells * stretch[1])) + 1))
        out += amplitude * cv2.resize(grid.astype(np.float32), (w, h), interpolation=cv2.INTER_CUBIC)
        total += amplitude
        amplitude *= 0.5
    return out / total


def _lerp(a: np.ndarray, b: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Per-pixel blend of colours a and b; t is (H, W) in [0, 1]."""
    return a + (b - a) * t[..., None]


def _grid(size: int) -> tuple[np.ndarray, np.ndarray]:
    """(u, v) of every texel centre of a (size, size) image, row 0 = v 1."""
    c = (np.arange(size, dtype=np.float32) + 0.5) / size
    return np.meshgrid(c, c[::-1])


def _fit_text(text: str, width: int, height: int, font: int, thickness_ratio: float = 0.09) -> tuple[float, int]:
    """Font scale and thickness for ``text`` to fill about (width, height) pixels."""
    (tw, th), _ = cv2.getTextSize(text, font, 1.0, 1)
    scale = min(width / tw, height / th)
    return scale, max(1, int(round(thickness_ratio * height)))


def _draw_text(canvas: np.ndarray, text: str, colour: np.ndarray, box: tuple[int, int, int, int],
               font: int = cv2.FONT_HERSHEY_DUPLEX, thickness_ratio: float = 0.09) -> None:
    """Draw ``text`` centred in ``box`` = (x0, y0, x1, y1) of ``canvas`` (in place, anti-aliased)."""
    x0, y0, x1, y1 = box
    scale, thickness = _fit_text(text, x1 - x0, y1 - y0, font, thickness_ratio)
    (tw, th), _ = cv2.getTextSize(text, font, scale, thickness)
    origin = (int(x0 + (x1 - x0 - tw) / 2), int(y0 + (y1 - y0 + th) / 2))
    # OpenCV draws text only into 8-bit images: draw a coverage mask and blend the colour through it.
    mask = np.zeros(canvas.shape[:2], np.uint8)
    cv2.putText(mask, text, origin, font, scale, 255, thickness, cv2.LINE_AA)
    canvas[:] = _lerp(canvas, np.asarray(colour, np.float32), mask.astype(np.float32) / 255)


def _finish(kind: str, albedo: np.ndarray, roughness: np.ndarray, metallic: np.ndarray | None = None,
            **scalars: float) -> Material:
    """Clamp the maps into their ranges and wrap them in a Material."""
    metallic = np.zeros(roughness.shape, np.float32) if metallic is None else metallic
    return Material(kind, np.clip(albedo, 0.0, 1.0).astype(np.float32),
                    np.clip(roughness, 0.05, 1.0).astype(np.float32), np.clip(metallic, 0.0, 1.0).astype(np.float32),
                    **scalars)


# ------------------------------------------------------------------------------------------ materials


def wood_material(rng: np.random.Generator, size: int) -> Material:
    """Varnished planks: grain runs along u, planks are stacked along v, with rings, fibres and knots."""
    u, v = _grid(size)
    planks = int(rng.integers(4, 7))
    plank = np.minimum((v * planks).astype(np.int64), planks - 1)
    across = v * planks - plank  # position across the plank, [0, 1)
    phase = rng.uniform(0, 1, planks)[plank]
    warp = fractal_noise(rng, (size, size), base_cells=3, octaves=3, stretch=(1.0, 0.3))
    # Growth rings are level sets of a distance to a slightly tilted pith, warped by noise.
    rings_coord = rng.uniform(5, 9) * (across + 0.35 * np.sin(2 * np.pi * (0.7 * u + phase))) + 1.2 * warp
    for _ in range(int(rng.integers(2, 5))):  # knots bend the rings around a centre
        cu, cv, r = rng.uniform(0, 1), rng.uniform(0, 1), rng.uniform(0.01, 0.03)
        d2 = ((u - cu) * 0.5) ** 2 + (v - cv) ** 2
        rings_coord += 1.5 * np.exp(-d2 / (4 * r * r))
    rings = (0.5 + 0.5 * np.sin(2 * np.pi * rings_coord)) ** 3
    fibres = fractal_noise(rng, (size, size), base_cells=16, octaves=3, stretch=(4.0, 0.15))
    light = np.array([0.70, 0.50, 0.31], np.float32) * rng.uniform(0.85, 1.1, 3).astype(np.float32)
    dark = np.array([0.38, 0.22, 0.11], np.float32) * rng.uniform(0.85, 1.1, 3).astype(np.float32)
    t = np.clip(0.65 * rings + 0.18 * fibres + 0.1, 0, 1)
    albedo = _lerp(light, dark, t) * rng.uniform(0.85, 1.1, planks)[plank][..., None]
    gap = np.minimum(across, 1 - across) * size / planks < 1.5  # dark seams between planks
    albedo[gap] *= 0.35
    roughness = 0.28 + 0.25 * rings + 0.05 * fibres
    roughness[gap] = 0.8
    return _finish("wood", albedo, roughness, specular=0.5)


def box_atlas_orientations(mesh: Mesh) -> list[tuple[int, bool]]:
    """How to draw an upright, unmirrored letter in each cell of a 3 x 2 box atlas, seen from outside.

    The surface frame (+u, +v) of a cell may be mirrored as seen from outside (a box from another tool may
    be built so) and may have the object's +z along any in-plane direction, so both are measured on the mesh.

    Args:
        mesh: a box-like mesh whose faces each own one cell of the 3 columns x 2 rows UV atlas
            (``triton_s2r.render.primitives.box``); other meshes get the identity for every cell.

    Returns:
        Per cell (index = row * 3 + column, row 0 at v < 0.5): ``(quarter_turns, mirror)`` for
        ``np.rot90(letter, quarter_turns)`` followed, if ``mirror``, by ``np.fliplr``.
    """
    identity = [(0, False)] * 6
    pos, uv = mesh.v_pos.double().numpy(), mesh.v_uv.double().numpy()
    tri_pos, tri_uv = pos[mesh.t_pos_idx.numpy()], uv[mesh.t_uv_idx.numpy()]  # (F, 3, 3), (F, 3, 2)
    cells = np.floor(tri_uv * [3, 2]).clip(0, [2, 1]).astype(np.int64)
    cell = cells[:, 0, 1] * 3 + cells[:, 0, 0]
    if not (cells == cells[:, :1]).all() or len(np.unique(cell)) != 6:
        return identity
    edges_p = (tri_pos[:, 1:] - tri_pos[:, :1]).transpose(0, 2, 1)  # (F, 3, 2)
    edges_uv = (tri_uv[:, 1:] - tri_uv[:, :1]).transpose(0, 2, 1)  # (F, 2, 2)
    if (np.abs(np.linalg.det(edges_uv)) < 1e-12).any():
        return identity
    jacobian = edges_p @ np.linalg.inv(edges_uv)  # (F, 3, 2): columns dP/du, dP/dv
    centre = pos.mean(0)
    out = []
    for c in range(6):
        d_u, d_v = jacobian[cell == c].mean(0).T
        outward = tri_pos[cell == c].reshape(-1, 3).mean(0) - centre
        mirror = bool(np.dot(np.cross(d_u, d_v), outward) < 0)
        # Where the letter's top ends up after rot90(k) then the optional flip of u: k=0 +v, 1 -u, -1 +u, 2 -v.
        flip = -1 if mirror else 1
        tops = {0: d_v, 1: -flip * d_u, -1: flip * d_u, 2: -d_v}
        ups = {k: np.dot(t / max(np.linalg.norm(t), 1e-12), [0, 0, 1]) for k, t in tops.items()}
        best = max(ups, key=ups.get)
        out.append((best if ups[best] > 0.5 else 0, mirror))  # top and bottom faces: any turn is upright
    return out


def alphabet_block_material(rng: np.random.Generator, size: int,
                            orientations: list[tuple[int, bool]] | None = None) -> Material:
    """A painted wooden toy block: per face a colour, an inset frame and one big letter (box atlas).

    Args:
        rng: random generator.
        size: texture side in pixels.
        orientations: per atlas cell ``(quarter_turns, mirror)`` (``box_atlas_orientations``); default none.
    """
    orientations = orientations or [(0, False)] * 6
    albedo = np.zeros((size, size, 3), np.float32)
    letters = rng.choice(list(string.ascii_uppercase), 6, replace=False)
    colours = rng.choice(len(_TOY_PALETTE), 6, replace=False)
    for cell in range(6):
        col, row = cell % 3, cell // 3
        # Cell (col, row) spans u in [col/3, (col+1)/3] and v in [row/2, (row+1)/2]; image rows run down from v = 1.
        x0, x1 = round(col * size / 3), round((col + 1) * size / 3)
        y0, y1 = round((1 - (row + 1) / 2) * size), round((1 - row / 2) * size)
        bg = _TOY_PALETTE[colours[cell]]
        ink = _TOY_PALETTE[(colours[cell] + rng.integers(2, len(_TOY_PALETTE) - 1)) % len(_TOY_PALETTE)]
        face = _block_face(rng, y1 - y0, bg, ink, str(letters[cell]), *orientations[cell])
        albedo[y0:y1, x0:x1] = cv2.resize(face, (x1 - x0, y1 - y0), interpolation=cv2.INTER_AREA)
    # Paint over wood: faint grain and wear show through.
    wear = fractal_noise(rng, (size, size), base_cells=24, octaves=3, stretch=(2.0, 0.5))
    albedo *= (1 + 0.06 * wear)[..., None]
    roughness = 0.45 + 0.08 * wear
    return _finish("alphabet_block", albedo, roughness, specular=0.5)


def _block_face(rng: np.random.Generator, side: int, bg: np.ndarray, ink: np.ndarray, letter: str,
                quarter_turns: int, mirror: bool) -> np.ndarray:
    """One (side, side, 3) block face: background, an inset frame, and a letter turned (and mirrored)."""
    face = np.empty((side, side, 3), np.float32)
    face[:] = bg
    inset, frame = int(0.1 * side), max(1, int(0.045 * side))
    cv2.rectangle(face, (inset, inset), (side - 1 - inset, side - 1 - inset), tuple(float(c) for c in ink), frame,
                  cv2.LINE_AA)
    font = [cv2.FONT_HERSHEY_DUPLEX, cv2.FONT_HERSHEY_TRIPLEX, cv2.FONT_HERSHEY_COMPLEX][int(rng.integers(3))]
    margin = int(0.24 * side)
    _draw_text(face, letter, ink, (margin, margin, side - margin, side - margin), font, thickness_ratio=0.12)
    face = np.rot90(face, quarter_turns)
    return np.ascontiguousarray(np.fliplr(face) if mirror else face)


def ball_material(rng: np.random.Generator, size: int) -> Material:
    """A rubber ball (latitude-longitude UVs): coloured gores, white caps, polka dots, a wavy band."""
    u, v = _grid(size)
    gores = int(rng.integers(4, 9))
    colours = _TOY_PALETTE[rng.choice(len(_TOY_PALETTE) - 2, gores)]  # no white/black gores
    albedo = colours[np.minimum((u * gores).astype(np.int64), gores - 1)]
    # Dots on a staggered lattice; longitude spacing shrinks at the poles, so keep them near the equator.
    rows = 7
    ring = np.floor(v * rows)
    du = (u * gores * 2 + 0.5 * (ring % 2)) % 1 - 0.5
    dv = (v * rows) % 1 - 0.5
    dots = (du**2 + dv**2 < 0.28**2) & (np.abs(v - 0.5) < 0.35)
    albedo[dots] = _TOY_PALETTE[8]
    band = np.abs(v - 0.5 - 0.04 * np.sin(2 * np.pi * (u * rng.integers(3, 7) + rng.uniform()))) < 0.03
    albedo[band] = _TOY_PALETTE[rng.integers(len(_TOY_PALETTE) - 2)] * 0.6
    albedo[np.abs(v - 0.5) > 0.42] = _TOY_PALETTE[8]  # white polar caps
    grain = fractal_noise(rng, (size, size), base_cells=32, octaves=2)
    albedo = albedo * (1 + 0.04 * grain)[..., None]
    return _finish("ball", albedo, 0.35 + 0.05 * grain, specular=0.5, clearcoat=0.4)


def can_material(rng: np.random.Generator, size: int) -> Material:
    """A food can (cylinder UVs, u around, v up): metal rims, printed label with stripes, text and a logo."""
    u, v = _grid(size)
    bg, stripe, ink = (_TOY_PALETTE[i] for i in rng.choice(len(_TOY_PALETTE), 3, replace=False))
    albedo = np.empty((size, size, 3), np.float32)
    albedo[:] = bg
    # The label is drawn on a twice-as-wide canvas and squeezed back: a can's circumference is about twice
    # its height, so text comes out with natural proportions on the can.
    canvas = np.empty((size, 2 * size, 3), np.float32)
    canvas[:] = bg
    for centre in rng.uniform(0.2, 0.8, 2):
        y = int((1 - centre) * size)
        cv2.rectangle(canvas, (0, y - size // 30), (2 * size, y + size // 30), tuple(float(c) for c in stripe), -1)
    word = "".join(rng.choice(list("TRITONSOUPBEANSCORN"), int(rng.integers(4, 7))))
    for k in range(2):  # the brand twice around the can, with a round logo between
        x0 = k * size
        _draw_text(canvas, word, ink, (x0 + size // 10, int(0.38 * size), x0 + int(0.9 * size), int(0.58 * size)))
        _draw_text(canvas, "NET WT 400g", ink, (x0 + size // 4, int(0.66 * size), x0 + int(0.75 * size),
                                                int(0.72 * size)), cv2.FONT_HERSHEY_SIMPLEX)
        cv2.circle(canvas, (x0 + size - size // 20, int(0.25 * size)), size // 12, tuple(float(c) for c in stripe), -1,
                   cv2.LINE_AA)
    albedo = cv2.resize(canvas, (size, size), interpolation=cv2.INTER_AREA)
    rim = (v < 0.09) | (v > 0.91)
    ridges = 0.5 + 0.5 * np.sin(2 * np.pi * v * 60)  # rolled ridges of the rims
    albedo[rim] = (np.array([0.78, 0.78, 0.80], np.float32) * (0.85 + 0.15 * ridges[rim])[:, None])
    brushed = fractal_noise(rng, (size, size), base_cells=8, octaves=3, stretch=(0.2, 6.0))
    roughness = np.where(rim, 0.18 + 0.05 * brushed, 0.3 + 0.03 * brushed)
    return _finish("can", albedo, roughness, rim.astype(np.float32), specular=0.5, clearcoat=0.5)


def painted_material(rng: np.random.Generator, size: int) -> Material:
    """Robot plastic: a base paint with tape marks, hazard stripes, stickers, printed text and scuffs.

    Robot links have unwrapped (chart) UVs, so patterns are spread all over UV space: wherever the charts
    fall, they catch some marks.
    """
    base = _ROBOT_BASES[rng.integers(len(_ROBOT_BASES))]
    mottling = fractal_noise(rng, (size, size), base_cells=4, octaves=4)
    albedo = base * (1 + 0.05 * mottling)[..., None]
    roughness = 0.38 + 0.04 * mottling
    # A thin accent stripe pattern across the whole atlas (e.g. a manufacturer's livery).
    u, v = _grid(size)
    angle, period = rng.uniform(0, np.pi), rng.uniform(0.12, 0.25)
    across = (u * np.cos(angle) + v * np.sin(angle)) / period
    stripe = np.abs(across - np.round(across)) < 0.06
    albedo[stripe] = _TAPE_PALETTE[rng.integers(len(_TAPE_PALETTE))] * 0.9
    for _ in range(int(rng.integers(10, 18))):
        _tape_mark(rng, albedo, roughness)
    for _ in range(int(rng.integers(6, 12))):  # round stickers and bolt heads
        centre = (int(rng.integers(size)), int(rng.integers(size)))
        colour = _TAPE_PALETTE[rng.integers(len(_TAPE_PALETTE))]
        cv2.circle(albedo, centre, int(rng.integers(size // 60, size // 20)), tuple(float(c) for c in colour), -1,
                   cv2.LINE_AA)
    for _ in range(int(rng.integers(3, 6))):  # printed labels
        x, y = int(rng.integers(0, size * 3 // 4)), int(rng.integers(size // 10, size))
        text = str(rng.choice(["TRITON", "AXIS 4", "CAUTION", "S/N 0427", "FR3", "PINCH"]))
        _draw_text(albedo, text, np.array([0.05, 0.05, 0.06]), (x, y - size // 16, x + size // 4, y),
                   cv2.FONT_HERSHEY_SIMPLEX)
    scuffs = np.zeros((size, size), np.float32)
    for _ in range(int(rng.integers(30, 60))):
        p = rng.integers(0, size, 2)
        q = p + rng.integers(-size // 12, size // 12, 2)
        cv2.line(scuffs, tuple(int(a) for a in p), tuple(int(a) for a in q), float(rng.uniform(0.3, 1.0)), 1,
                 cv2.LINE_AA)
    albedo *= (1 - 0.35 * scuffs)[..., None]
    roughness += 0.3 * scuffs
    return _finish("painted", albedo, roughness, specular=0.5)


def _tape_mark(rng: np.random.Generator, albedo: np.ndarray, roughness: np.ndarray) -> None:
    """Stick one rotated strip of tape (plain or hazard-striped) onto the maps, in place."""
    size = albedo.shape[0]
    centre = rng.uniform(0, size, 2)
    length, width = rng.uniform(0.08, 0.3) * size, rng.uniform(0.02, 0.06) * size
    angle = rng.uniform(0, 180)
    corners = cv2.boxPoints(((float(centre[0]), float(centre[1])), (float(length), float(width)), float(angle)))
    mask = np.zeros(albedo.shape[:2], np.uint8)
    cv2.fillPoly(mask, [np.round(corners).astype(np.int32)], 1)
    hit = mask.astype(bool)
    colour = _TAPE_PALETTE[rng.integers(len(_TAPE_PALETTE))]
    if rng.uniform() < 0.35:  # hazard tape: diagonal yellow/black bands
        yy, xx = np.nonzero(hit)
        bands = ((xx + yy) // max(2, int(width / 2))) % 2 == 0
        albedo[yy, xx] = np.where(bands[:, None], _TAPE_PALETTE[0], _TAPE_PALETTE[5])
    else:
        albedo[hit] = colour
    roughness[hit] = 0.55


_MAKERS = {
    "wood": wood_material,
    "alphabet_block": alphabet_block_material,
    "ball": ball_material,
    "can": can_material,
    "painted": painted_material,
}
