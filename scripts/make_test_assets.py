"""Build the committed test dataset ``tests/assets/tiny``: the tabletop benchmark at test scale, a few hundred KB.

Run from the repository root (needs the ``scenes`` extra; the tests that read the result do not)::

    python scripts/make_test_assets.py            # rebuilds tests/assets/tiny from scratch
    python scripts/make_test_assets.py --out DIR  # somewhere else

It is ``triton-s2r make-dataset --preset tiny --frames 4 --resolution 32 --seed 0`` with three changes that keep
the folder small and every file consistent with the others:

* the Panda's links are simplified (vertex clustering, then unwrapped again with xatlas) to a few hundred
  triangles each and handed to ``make_dataset`` through the link cache ``Panda.load`` reads (``TRITON_S2R_CACHE``
  points at a temporary folder meanwhile, so the usual cache keeps the full links), and the ball is a coarser
  sphere;
* the baked meshes are rewritten as indexed OBJ files (shared vertices instead of three per triangle), and the
  UVL frames are rendered again from them, so re-rendering ``states.npz`` reproduces the stored frames;
* the hidden albedo images are reduced to 64 x 64 (eval resamples them to its texture resolution anyway).

The tests take the preset's facts (labels, frame counts, resolution) from ``tests/assets/tiny/dataset.yaml``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

import cv2
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "tests" / "assets" / "tiny"
ARGS = {"preset": "tiny", "frames": 4, "resolution": 32, "seed": 0}
CLUSTER_CELL = 0.03  # metres: the grid of the vertex clustering (Panda links are 0.1-0.3 m long)
ALBEDO_SIZE = 64


def cluster_vertices(v_pos: np.ndarray, faces: np.ndarray, cell: float) -> tuple[np.ndarray, np.ndarray]:
    """Simplify a triangle mesh by merging the vertices of each grid cell into their mean.

    The triangles that collapse are dropped; good enough for a 32 px test frame.
    """
    keys = np.floor(v_pos / cell).astype(np.int64)
    _, cluster, counts = np.unique(keys, axis=0, return_inverse=True, return_counts=True)
    cluster = cluster.reshape(-1)
    merged = np.zeros((len(counts), 3))
    np.add.at(merged, cluster, v_pos)
    merged /= counts[:, None]
    tris = cluster[faces]
    keep = (tris[:, 0] != tris[:, 1]) & (tris[:, 1] != tris[:, 2]) & (tris[:, 0] != tris[:, 2])
    tris = np.unique(tris[keep], axis=0)
    used, tris = np.unique(tris, return_inverse=True)
    return merged[used].astype(np.float32), tris.reshape(-1, 3)


def write_low_poly_links(cache: Path) -> None:
    """Write ``Panda.load``'s link cache with simplified, re-unwrapped links into ``cache``."""
    import xatlas

    from triton_s2r.tabletop.robot import Panda
    from triton_s2r.utils.files import atomic_savez

    full = Panda.load()  # the full-resolution links, from the usual cache
    arrays = {}
    for link, mesh in full.link_meshes.items():
        v_pos, faces = cluster_vertices(mesh.v_pos.numpy(), mesh.t_pos_idx.numpy(), CLUSTER_CELL)
        vmapping, indices, uvs = xatlas.parametrize(v_pos, faces.astype(np.uint32))
        arrays.update({f"{link}/v": v_pos[vmapping], f"{link}/f": indices.astype(np.int64), f"{link}/uv": uvs})
        print(f"{link}: {len(mesh.t_pos_idx)} -> {len(indices)} triangles")
    atomic_savez(cache / "panda_links_xatlas_v1.npz", **arrays)


def write_indexed_obj(path: Path) -> None:
    """Rewrite a baked OBJ (three vertices per triangle) with shared positions and UVs (6 digits)."""
    from triton_s2r.render.mesh import load_mesh

    mesh = load_mesh(path)
    v_pos, v_idx = np.unique(mesh.v_pos.numpy(), axis=0, return_inverse=True)
    v_uv, uv_idx = np.unique(mesh.v_uv.numpy(), axis=0, return_inverse=True)
    t_pos = v_idx.reshape(-1)[mesh.t_pos_idx.numpy()] + 1
    t_uv = uv_idx.reshape(-1)[mesh.t_uv_idx.numpy()] + 1
    lines = [f"v {x:.6g} {y:.6g} {z:.6g}" for x, y, z in v_pos]
    lines += [f"vt {u:.6g} {v:.6g}" for u, v in v_uv]
    lines += ["f " + " ".join(f"{p}/{t}" for p, t in zip(ps, ts, strict=True)) for ps, ts in zip(t_pos, t_uv,
                                                                                                    strict=True)]
    path.write_text("\n".join(lines) + "\n")


def rerender_uvl(root: Path) -> None:
    """Render every split's UVL frames again from the dataset's own baked scene and states."""
    from triton_s2r.data.datasets import BenchmarkDataset
    from triton_s2r.render import load_scene, make_rasterizer, write_uvl
    from triton_s2r.render.uvl import gbuffer_to_uvl

    dataset = BenchmarkDataset.open(root)
    scene = load_scene(root / "assets" / "scene.yaml")
    rasterizer = make_rasterizer("embree")
    for split, info in dataset.splits.items():
        if info["sim"]:
            uvl = gbuffer_to_uvl(rasterizer.render(scene, dataset.states(split)), scene.labels)
            for i, path in enumerate(dataset.frame_paths(split, "uvl")):
                write_uvl(path, uvl[i])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="dataset folder (replaced)")
    out = parser.parse_args(argv).out.resolve()
    sys.path.insert(0, str(ROOT))

    with tempfile.TemporaryDirectory() as cache:
        write_low_poly_links(Path(cache))
        os.environ["TRITON_S2R_CACHE"] = cache  # Panda.load in make_dataset reads the simplified links
        from triton_s2r.render.primitives import uv_sphere
        from triton_s2r.tabletop import scene as tabletop_scene
        from triton_s2r.tabletop.dataset import make_dataset

        _, footprint, centre = tabletop_scene.OBJECTS["ball"]  # the centre's height is the ball's radius
        tabletop_scene.OBJECTS["ball"] = (lambda: uv_sphere(centre, rings=8, segments=16), footprint, centre)
        if out.exists():
            shutil.rmtree(out)
        make_dataset(out, backend="embree", **ARGS)

    for path in sorted((out / "assets" / "meshes").glob("*.obj")):
        write_indexed_obj(path)
    rerender_uvl(out)
    for path in sorted((out / "hidden" / "albedo").glob("*.png")):
        image = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
        assert image is not None, f"unreadable {path}"  # make_dataset wrote it just above
        cv2.imwrite(str(path), cv2.resize(image, (ALBEDO_SIZE, ALBEDO_SIZE), interpolation=cv2.INTER_AREA))
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(f"wrote {out} ({size / 1024:.0f} KB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
