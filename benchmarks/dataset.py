"""Wall time of ``triton-s2r make-dataset``, split into its stages.

Usage (from the repository root)::

    python -m benchmarks.dataset                      # the small preset (the CPU demo's), into a temporary folder
    python -m benchmarks.dataset --preset tiny --no-write

Builds the preset from scratch once under cProfile and charges each stage the cumulative time of the functions
that do it (the profiler adds a few per cent). The machine is often shared, so the load average before and
after goes into the table. The table goes into docs/benchmarks.md (unless --no-write).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import tempfile
import time
from pathlib import Path

from benchmarks.report import machine, write_section
from triton_s2r.tabletop.dataset import PRESETS, make_dataset
from triton_s2r.tabletop.mitsuba_variant import select_variant

#: stage -> the functions (file suffix, name, optional caller name) whose cumulative time it is charged.
STAGES = {
    "states: sampling, robot kinematics": [("tabletop/dataset.py", "_sample_splits", None)],
    "assets: baked OBJ meshes": [("tabletop/dataset.py", "_write_assets", None)],
    "hidden appearance: textures, albedo files": [("tabletop/appearance.py", "make_appearance", None),
                                                  ("tabletop/hidden.py", "write_hidden_albedo", None)],
    "sim: embree ray casting": [("render/embree.py", "render", None)],
    "sim: G-buffer to UVL": [("render/uvl.py", "gbuffer_to_uvl", None)],
    "files: UVL and real PNGs": [("render/uvl.py", "write_uvl", None),
                                 ("utils/files.py", "write_image", "make_dataset")],
    "real: shape groups and BSDFs (once)": [("tabletop/real.py", "__init__", None)],
    "real: path tracing (mi.render)": [("mitsuba/python/util.py", "render", None)],
    "real: camera effects": [("tabletop/camera_effects.py", "develop", None)],
}
#: Charged the rest of RealRenderer.render: each frame's lights and sensor, the scene loaded once and updated per frame.
SCENE_STAGE = "real: per-frame scene set-up"


def cumulative(stats: pstats.Stats, file_suffix: str, name: str, caller: str | None) -> float:
    """Seconds spent in (and under) the function ``name`` of a file ending in ``file_suffix``."""
    total = 0.0
    for (file, _, function), (_, _, _, cumtime, callers) in stats.stats.items():  # type: ignore[attr-defined]
        if not (file.endswith(file_suffix) and function == name):
            continue
        if caller is None:
            total += cumtime
        else:
            total += sum(c[3] for (_, _, f), c in callers.items() if f == caller)
    return total


def profile_build(preset: str, out: Path) -> tuple[float, dict[str, float]]:
    """Build ``preset`` into ``out`` under cProfile: wall seconds and seconds per stage."""
    profiler = cProfile.Profile()
    start = time.perf_counter()
    profiler.runcall(make_dataset, out, preset=preset)
    wall = time.perf_counter() - start
    stats = pstats.Stats(profiler)
    stages = {stage: sum(cumulative(stats, *f) for f in functions) for stage, functions in STAGES.items()}
    render = cumulative(stats, "tabletop/real.py", "render", None)
    stages[SCENE_STAGE] = render - stages["real: path tracing (mi.render)"] - stages["real: camera effects"]
    stages["other: imports, robot meshes, manifest"] = wall - sum(stages.values())
    return wall, stages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default="small", choices=list(PRESETS))
    parser.add_argument("--out", type=Path, help="build here (must not hold a dataset); default: a temporary folder")
    parser.add_argument("--no-write", action="store_true", help="print only; leave docs/benchmarks.md alone")
    args = parser.parse_args()

    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        wall, stages = profile_build(args.preset, args.out or Path(tmp) / args.preset)
    load_after = os.getloadavg()[0]
    p = PRESETS[args.preset]
    real_frames = p.train_real + p.test + p.sequences * p.sequence_frames
    rows = ["| stage | seconds | share |", "|---|---:|---:|"]
    rows += [f"| {stage} | {seconds:.1f} | {seconds / wall:.0%} |" for stage, seconds in stages.items()]
    rows.append(f"| **whole build** | **{wall:.1f}** | 100% |")
    table = (f"`{args.preset}` preset: {p.resolution}x{p.resolution}, {p.train_sim + real_frames} UVL frames, "
             f"{real_frames} real frames path traced at {p.spp} samples/pixel with Mitsuba `{select_variant()}`. "
             f"Load average (1 min) {load_before:.1f} before, {load_after:.1f} after.\n\n" + "\n".join(rows))
    print(table)
    if not args.no_write:
        write_section(f"dataset:{machine()}", f"Dataset build: {machine()}", table)


if __name__ == "__main__":
    main()
