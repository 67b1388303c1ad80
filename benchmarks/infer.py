"""Inference speed: frames per second of translation alone and of rendering + translation.

Usage (from the repository root)::

    python -m benchmarks.infer                                   # CUDA (batch 64, bf16) if present, else CPU
    python -m benchmarks.infer --devices cpu --batch-cpu 2 --sizes 256 --no-write
    python -m benchmarks.infer --run-dir outputs/runs/demo --data outputs/data/small   # a trained run + its scene

Cases, each timed as the median over calls after two warm-up calls (synchronised on CUDA):

* ``translate``: one ``Translator`` call (texture at every pixel's UV, x_a, E_A, G_B; bf16 autocast on CUDA)
  on a G-buffer already on the device;
* ``render + translate``: rasterizing the frames' states (nvdiffrast on CUDA, embree on the CPU), the
  ``Translator`` call, and the uint8 frames copied to the host, i.e. what ``triton-s2r translate`` does per
  batch before encoding.

The model is the reference-width TRITON translator (``conf/model/triton.yaml``, or ``--experiment``'s),
randomly initialised (speed does not depend on the weights), unless ``--run-dir`` names a trained run. The
scene is the render benchmark's (~100k triangles, orbiting cameras) unless ``--data`` names a dataset, whose
baked scene and test states are used. The table goes into docs/benchmarks.md (unless --no-write).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import torch
from hydra import compose, initialize_config_module
from hydra.utils import instantiate
from omegaconf import open_dict

from benchmarks.render import benchmark_scene
from benchmarks.report import machine, write_section
from triton_s2r.data.datasets import BenchmarkDataset
from triton_s2r.inference.translator import Translator
from triton_s2r.render import FrameState, Scene, load_scene, make_rasterizer, nvdiffrast_available
from triton_s2r.render.primitives import orbit_cameras


def build_translator(run_dir: Path | None, experiment: str | None, num_labels: int, device: str,
                     compile_: bool) -> Translator:
    """A trained run, or the configured architecture with random weights."""
    if run_dir is not None:
        return Translator.from_run_dir(run_dir, device=device, compile=compile_)
    with initialize_config_module("triton_s2r.conf", version_base="1.3"):
        cfg = compose("train", overrides=[f"experiment={experiment}"] if experiment else [])
    with open_dict(cfg):
        cfg.num_labels = num_labels
    torch.manual_seed(0)
    return Translator(instantiate(cfg.model.translator), compile=compile_).to(device)


def scene_and_states(data: Path | None, batch: int, size: int) -> tuple[Scene, FrameState]:
    """``batch`` frames of ``size``² pixels: the dataset's test states, or orbiting cameras."""
    if data is None:
        scene = benchmark_scene()
        return scene, FrameState.static(scene, orbit_cameras(batch, width=size, height=size))
    dataset = BenchmarkDataset.open(data, check_files=False)
    states = dataset.states("test")
    index = [i % states.batch_size for i in range(batch)]
    states = states.select(index)
    return (load_scene(data / dataset.manifest["scene"]),
            FrameState(states.object_poses, states.camera.resized(size, size)))


def median_seconds(step: Callable[[], object], device: torch.device, seconds: float, min_calls: int) -> float:
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    for _ in range(2):  # warm-up: cuDNN autotuning, allocator, BVH builds
        step()
    sync()
    times: list[float] = []
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline or len(times) < min_calls:
        start = time.perf_counter()
        step()
        sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(translator: Translator, scene: Scene, state: FrameState, seconds: float) -> tuple[float, float]:
    """(translate-only, render + translate) frames per second for one batch of states."""
    device = translator.device
    backend = "nvdiffrast" if device.type == "cuda" else "embree"
    rasterizer = make_rasterizer(backend, device=device if backend == "nvdiffrast" else None)
    gbuffer = rasterizer.render(scene, state).to(device)

    def render_and_translate() -> object:
        frames = translator(rasterizer.render(scene, state)).translation
        return (frames * 255).round().to(torch.uint8).cpu()

    min_calls = 5 if device.type == "cuda" else 2
    translate_only = median_seconds(lambda: translator(gbuffer), device, seconds, min_calls)
    end_to_end = median_seconds(render_and_translate, device, seconds, min_calls)
    return state.batch_size / translate_only, state.batch_size / end_to_end


def rate(frames_per_second: float) -> str:
    """Three significant digits for slow CPU rates, one decimal (with thousands separators) otherwise."""
    return f"{frames_per_second:,.1f}" if frames_per_second >= 10 else f"{frames_per_second:.3g}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--devices", nargs="+", default=["cuda"] if torch.cuda.is_available() else ["cpu"],
                        choices=["cpu", "cuda"])
    parser.add_argument("--sizes", nargs="+", type=int, default=[256, 512])
    parser.add_argument("--batch-cuda", type=int, default=64, help="frames per call on CUDA")
    parser.add_argument("--batch-cpu", type=int, default=2, help="frames per call on the CPU")
    parser.add_argument("--run-dir", type=Path, default=None, help="a trained run (default: random weights)")
    parser.add_argument("--experiment", default=None, help="architecture of conf/experiment/NAME.yaml "
                        "(default: the reference widths of conf/model/triton.yaml)")
    parser.add_argument("--data", type=Path, default=None, help="dataset whose scene and test states to render")
    parser.add_argument("--compile", action="store_true", help="also time the torch.compile'd translator (CUDA)")
    parser.add_argument("--seconds", type=float, default=3.0, help="timing budget per case")
    parser.add_argument("--no-write", action="store_true", help="print only; leave docs/benchmarks.md alone")
    args = parser.parse_args()
    if "cuda" in args.devices and not nvdiffrast_available():
        parser.error("--devices cuda needs CUDA and nvdiffrast (pip install 'triton_s2r[gpu]')")

    rows = ["| device | precision | compile | resolution | batch | translate frames/s | "
            "render + translate frames/s |", "|---|---|---|---|---:|---:|---:|"]
    torch.backends.cudnn.benchmark = True  # fixed batch shapes: let cuDNN pick its fastest kernels
    for device in args.devices:
        batch = args.batch_cuda if device == "cuda" else args.batch_cpu
        for size in args.sizes:
            scene, state = scene_and_states(args.data, batch, size)
            for compile_ in [False, True] if device == "cuda" and args.compile else [False]:
                translator = build_translator(args.run_dir, args.experiment, scene.labels.num_labels, device,
                                              compile_)
                translate_fps, end_to_end_fps = measure(translator, scene, state, args.seconds)
                precision = "bf16 autocast" if device == "cuda" else "fp32"
                rows.append(f"| {device} | {precision} | {compile_} | {size}x{size} | {batch} | "
                            f"{rate(translate_fps)} | {rate(end_to_end_fps)} |")
                print(rows[-1], flush=True)
    model = f"run {args.run_dir}" if args.run_dir else f"experiment={args.experiment or '(reference widths)'}"
    where = f"dataset {args.data} (test states)" if args.data else "render benchmark scene, orbiting cameras"
    threads = f"CPU: {torch.get_num_threads()} threads. " if "cpu" in args.devices else ""
    texture = type(translator.model.texture).__name__
    texture += (f", rasterised once at {translator.texture_resolution}x{translator.texture_resolution} per label "
                "and sampled bilinearly" if translator.texture_resolution else ", evaluated at every pixel")
    table = (f"Translator {model}, {texture}; scene: {where}, "
             f"{scene.num_triangles:,} triangles. {threads}Median over calls after two warm-up calls; render + "
             f"translate includes rasterizing and copying uint8 frames to the host.\n\n" + "\n".join(rows))
    if not args.no_write:
        write_section(f"infer:{machine()}", f"Inference: {machine()}", table)
    print(table)


if __name__ == "__main__":
    main()
