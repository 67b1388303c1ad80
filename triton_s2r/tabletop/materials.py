"""The hidden materials of the benchmark's real domain, one generator per kind, drawn with numpy and OpenCV.

Every generator takes a random generator and a texture side and returns a ``Material`` (no files, no
downloads); ``triton_s2r.tabletop.appearance`` picks the kind per label:

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

import string
from dataclasses import dataclass

import cv2
import numpy as np

from triton_s2r.render.mesh import Mesh
from triton_s2r.tabletop.procedural import draw_text, fractal_noise, lerp, texel_grid

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
        kind: one of ``triton_s2r.tabletop.appearance.KINDS``.
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


def _finish(kind: str, albedo: np.ndarray, roughness: np.ndarray, metallic: np.ndarray | None = None,
            **scalars: float) -> Material:
    """Clamp the maps into their ranges and wrap them in a Material."""
    metallic = np.zeros(roughness.shape, np.float32) if metallic is None else metallic
    return Material(kind, np.clip(albedo, 0.0, 1.0).astype(np.float32),
                    np.clip(roughness, 0.05, 1.0).astype(np.float32), np.clip(metallic, 0.0, 1.0).astype(np.float32),
                    **scalars)


def wood_material(rng: np.random.Generator, size: int) -> Material:
    """Varnished planks: grain runs along u, planks are stacked along v, with rings, fibres and knots."""
    u, v = texel_grid(size)
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
    albedo = lerp(light, dark, t) * rng.uniform(0.85, 1.1, planks)[plank][..., None]
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
        best = max(ups, key=ups.__getitem__)
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
    draw_text(face, letter, ink, (margin, margin, side - margin, side - margin), font, thickness_ratio=0.12)
    face = np.rot90(face, quarter_turns)
    return np.ascontiguousarray(np.fliplr(face) if mirror else face)


def ball_material(rng: np.random.Generator, size: int) -> Material:
    """A rubber ball (latitude-longitude UVs): coloured gores, white caps, polka dots, a wavy band."""
    u, v = texel_grid(size)
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
    u, v = texel_grid(size)
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
        draw_text(canvas, word, ink, (x0 + size // 10, int(0.38 * size), x0 + int(0.9 * size), int(0.58 * size)))
        draw_text(canvas, "NET WT 400g", ink, (x0 + size // 4, int(0.66 * size), x0 + int(0.75 * size),
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
    u, v = texel_grid(size)
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
        draw_text(albedo, text, np.array([0.05, 0.05, 0.06]), (x, y - size // 16, x + size // 4, y),
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

