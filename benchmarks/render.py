"""Frames per second of the render backends on a ~100k-triangle tabletop scene.

Usage::

    python -m benchmarks.render                     # every backend available here
    python -m benchmarks.render --backends embree --sizes 256 --batches 1 16 --no-write

Writes a section per machine into docs/benchmarks.md (unless --no-write).
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from benchmarks.report import machine, write_section
from triton_s2r.render import FrameState, Scene, SceneObject, make_rasterizer, nvdiffrast_available
from triton_s2r.render.primitives import builtin_scene, orbit_cameras, uv_sphere


def benchmark_scene() -> Scene:
    """The built-in scene plus four dense spheres: about 100k triangles in 10 objects."""
    base = builtin_scene()
    extra = []
    for i, (x, y) in enumerate([(-0.35, -0.2), (-0.35, 0.2), (0.4, 0.25), (0.0, 0.28)]):
        pose = torch.eye(4)
        pose[:3, 3] = torch.tensor([x, y, 0.07])
        extra.append(SceneObject(f"sphere_{i}", 3, uv_sphere(0.07, rings=112, segments=112).transformed(pose)))
    return Scene(base.objects + tuple(extra), base.labels)


def fps(backend: str, scene: Scene, size: int, batch: int, seconds: float) -> float:
    rasterizer = make_rasterizer(backend)
    state = FrameState.static(scene, orbit_cameras(batch, width=size, height=size))
    sync = torch.cuda.synchronize if backend == "nvdiffrast" else (lambda: None)
    for _ in range(3):  # warm-up: BVH builds, plugin load, allocator
        rasterizer.render(scene, state)
    sync()
    times = []
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline or len(times) < 5:
        t0 = time.perf_counter()
        rasterizer.render(scene, state)
        sync()
        times.append(time.perf_counter() - t0)
    return batch / statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    default = ["embree"] + (["nvdiffrast"] if nvdiffrast_available() else [])
    parser.add_argument("--backends", nargs="+", default=default, choices=["embree", "nvdiffrast"])
    parser.add_argument("--sizes", nargs="+", type=int, default=[256, 512])
    parser.add_argument("--batches", nargs="+", type=int, default=[1, 16])
    parser.add_argument("--seconds", type=float, default=3.0, help="timing budget per configuration")
    parser.add_argument("--no-write", action="store_true", help="print only; leave docs/benchmarks.md alone")
    args = parser.parse_args()

    scene = benchmark_scene()
    rows = ["| backend | resolution | batch | frames/s |", "|---|---|---|---|"]
    for backend in args.backends:
        for size in args.sizes:
            for batch in args.batches:
                value = fps(backend, scene, size, batch, args.seconds)
                rows.append(f"| {backend} | {size}x{size} | {batch} | {value:,.1f} |")
                print(rows[-1], flush=True)
    table = (f"Scene: built-in tabletop + 4 dense spheres, {scene.num_triangles:,} triangles, "
             f"{scene.num_objects} objects.\n\n")
    table += "\n".join(rows)
    if not args.no_write:
        write_section(f"render:{machine()}", f"Rendering: {machine()}", table)
    print(table)


if __name__ == "__main__":
    main()
