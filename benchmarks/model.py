"""Forward + backward time and peak memory of the TRITON textures, generator and losses.

Usage (from the repository root)::

    python -m benchmarks.model                      # CPU fp32, plus CUDA fp32 and bf16 if a GPU is present
    python -m benchmarks.model --devices cuda --repeats 50
    python -m benchmarks.model --cases texture_neural surface_consistency --no-write
    python -m benchmarks.model --devices cpu --cpu-precisions fp32 bf16 --cases texture_neural texture_neural_recompute

Every (case, device, precision) runs in a fresh subprocess, so peak memory is not hidden by the caching
of earlier cases: on CUDA it is ``max_memory_allocated`` above what the setup (modules, inputs) holds; on
CPU it is the growth of the process's peak RSS (VmHWM, reset through /proc/self/clear_refs) during the
first, warm-up step. Times are medians over ``--repeats`` steps after that warm-up, synchronised on CUDA.
The table goes into this machine's "model:" section of docs/benchmarks.md (unless --no-write).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import platform
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

from benchmarks.report import machine, write_section
from triton_s2r.losses import (
    discriminator_adversarial_loss,
    generator_adversarial_loss,
    reconstruction_loss,
    surface_consistency_loss,
    texture_reality_loss,
)
from triton_s2r.models import MultiScaleDiscriminator, NeuralTexture, RasterTexture, StyleFreeGenerator

REPO = Path(__file__).resolve().parents[1]
NUM_LABELS = 5
CASES = {
    "texture_neural": "neural texture, exact UV (128 freq, 3x256 MLP)",
    "texture_neural_recompute": "neural texture, exact UV, MLP recomputed in the backward pass",
    "texture_neural_baked": "neural texture, baked 256² + bilinear",
    "texture_raster": "raster texture 256², 3 mip levels",
    "generator": "generator sim→real, E_A + G_B (64 ch, 4 res)",
    "discriminator": "discriminator D step, 3-scale PatchGAN, real + fake",
    "adversarial": "loss: adversarial LSGAN, G side (incl. D_B forward)",
    "reconstruction": "loss: reconstruction L1 + 1 − MS-SSIM, 3 ch",
    "content": "loss: content L1 + 1 − MS-SSIM, 8 ch at 1/4 res",
    "surface_consistency": "loss: surface consistency ℓUC, D = 128",
    "texture_reality": "loss: texture reality ℓTR, L1 + 1 − MS-SSIM",
}


def synthetic_gbuffer(batch: int, size: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """Blocky labels with some void and smoothly varying UVs that differ per image."""
    y, x = torch.meshgrid(torch.arange(size), torch.arange(size), indexing="ij")
    shift = torch.arange(batch).view(-1, 1, 1)
    label = 1 + (x // 64 + y // 64 + shift) % NUM_LABELS
    label = torch.where((x // 32 + y // 32 + shift) % 7 == 0, torch.zeros_like(label), label)
    u = torch.frac(x / 128 + 0.13 * shift)
    v = torch.frac(y / 96 + 0.07 * shift)
    return torch.stack([u, v], dim=1).float().to(device), label.to(device)


def build_case(
    name: str, batch: int, size: int, device: torch.device
) -> tuple[Callable[[], torch.Tensor], list]:
    """Modules and inputs for one case; returns (forward -> scalar loss, tensors whose grads to clear)."""
    torch.manual_seed(0)
    uv, label = synthetic_gbuffer(batch, size, device)
    image = torch.randn(batch, 3, size, size, device=device).tanh().requires_grad_()
    target = torch.randn(batch, 3, size, size, device=device).tanh()
    if name in ("texture_neural", "texture_neural_recompute", "texture_neural_baked", "texture_raster"):
        texture = {
            "texture_neural": lambda: NeuralTexture(NUM_LABELS),
            "texture_neural_recompute": lambda: NeuralTexture(NUM_LABELS, recompute=True),
            "texture_neural_baked": lambda: NeuralTexture(NUM_LABELS, sampling="baked"),
            "texture_raster": lambda: RasterTexture(NUM_LABELS, resolution=256, num_mip_levels=3),
        }[name]().to(device)
        return lambda: texture(uv, label).float().mean(), list(texture.parameters())
    if name == "generator":
        gen_a, gen_b = StyleFreeGenerator(6).to(device), StyleFreeGenerator(3).to(device)
        x_a = torch.randn(batch, 6, size, size, device=device)
        parameters = [*gen_a.parameters(), *gen_b.parameters()]
        return lambda: gen_b.decode(gen_a.encode(x_a)).float().mean(), parameters
    if name in ("discriminator", "adversarial"):
        dis = MultiScaleDiscriminator(3).to(device)
        if name == "discriminator":
            return (
                lambda: discriminator_adversarial_loss(dis(target), dis(image.detach())),
                list(dis.parameters()),
            )
        return lambda: generator_adversarial_loss(dis(image)), [image, *dis.parameters()]
    if name == "reconstruction":
        return lambda: reconstruction_loss(image, target), [image]
    if name == "content":
        code = torch.rand(batch, 8, size // 4, size // 4, device=device, requires_grad=True)
        code_target = torch.rand(batch, 8, size // 4, size // 4, device=device)
        return lambda: reconstruction_loss(code, code_target, data_range=1.0), [code]
    if name == "surface_consistency":
        return lambda: surface_consistency_loss(image, uv, label, NUM_LABELS, grid_size=128), [image]
    if name == "texture_reality":
        return lambda: texture_reality_loss(image, target, label), [image]
    raise ValueError(f"unknown case {name!r}; choose from {sorted(CASES)}")


def _rss_kib(field: str) -> int:
    status = Path("/proc/self/status").read_text()
    match = re.search(rf"^{field}:\s+(\d+) kB", status, re.MULTILINE)
    assert match is not None, f"no {field} in /proc/self/status"
    return int(match.group(1))


def kept_for_backward(kept: dict[int, int]) -> torch.autograd.graph.saved_tensors_hooks:
    """Hooks that record in ``kept`` each distinct storage autograd saves for the backward pass: pointer -> bytes."""

    def keep(tensor: torch.Tensor) -> torch.Tensor:
        kept[tensor.untyped_storage().data_ptr()] = tensor.untyped_storage().nbytes()
        return tensor

    return torch.autograd.graph.saved_tensors_hooks(keep, lambda tensor: tensor)


def run_worker(name: str, device_name: str, precision: str, batch: int, size: int, repeats: int) -> dict:
    """Time one case in this process; returns milliseconds, peak MiB and the MiB kept for the backward pass."""
    device = torch.device(device_name)
    forward, grad_holders = build_case(name, batch, size, device)
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=precision == "bf16")

    kept: dict[int, int] = {}  # what autograd saved for the backward pass in the warm-up step

    def step(count_kept: bool = False) -> None:
        for tensor in grad_holders:
            tensor.grad = None
        with autocast, kept_for_backward(kept) if count_kept else contextlib.nullcontext():
            loss = forward()
        loss.backward()
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        base = torch.cuda.memory_allocated(device)
        step(count_kept=True)
        peak_mib = (torch.cuda.max_memory_allocated(device) - base) / 2**20
    else:
        Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current RSS
        base = _rss_kib("VmRSS")
        step(count_kept=True)
        peak_mib = (_rss_kib("VmHWM") - base) / 1024
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return {"ms": 1000 * statistics.median(times), "peak_mib": peak_mib, "kept_mib": sum(kept.values()) / 2**20}


def cpu_name() -> str:
    """CPU model and the threads torch uses (``report.machine`` names the GPU when there is one)."""
    model = platform.processor() or "CPU"
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        match = re.search(r"^model name\s*:\s*(.+)$", cpuinfo.read_text(), re.MULTILINE)
        model = match.group(1).strip() if match else model
    return f"{model}, {torch.get_num_threads()} threads"


def run_in_subprocess(case: str, device: str, precision: str, args: argparse.Namespace, repeats: int) -> str:
    """Run one worker; returns the "ms | MiB | MiB" cells, or "failed" cells after printing the error."""
    worker = [sys.executable, "-m", "benchmarks.model", "--worker", case, device, precision]
    worker += ["--batch", str(args.batch), "--size", str(args.size), "--repeats", str(repeats)]
    completed = subprocess.run(worker, capture_output=True, text=True, cwd=REPO)
    if completed.returncode != 0:
        print(completed.stderr, file=sys.stderr)
        return "failed | failed | failed"
    result = json.loads(completed.stdout.strip().splitlines()[-1])
    return f"{result['ms']:,.1f} | {result['peak_mib']:,.0f} | {result['kept_mib']:,.0f}"


def main() -> None:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
    parser.add_argument("--devices", nargs="+", default=["cpu", "cuda"], choices=["cpu", "cuda"])
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    parser.add_argument("--cpu-precisions", nargs="+", default=["fp32"], choices=["fp32", "bf16"],
                        help="the CPU columns (CUDA always runs fp32 and bf16)")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=None, help="timed steps (default: CPU 2, CUDA 20)")
    parser.add_argument("--no-write", action="store_true", help="print only; leave docs/benchmarks.md alone")
    parser.add_argument("--worker", nargs=3, metavar=("CASE", "DEVICE", "PRECISION"), help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.worker:
        name, device, precision = args.worker
        print(json.dumps(run_worker(name, device, precision, args.batch, args.size, args.repeats or 1)))
        return

    columns = [("cpu", precision) for precision in args.cpu_precisions] if "cpu" in args.devices else []
    if "cuda" in args.devices:
        if torch.cuda.is_available():
            columns += [("cuda", "fp32"), ("cuda", "bf16")]
        else:
            print("CUDA is not available: skipping the CUDA columns.", file=sys.stderr)
    if not columns:
        parser.error("nothing to run")

    header = " | ".join(f"{device.upper()} {precision} ms | peak MiB | kept MiB" for device, precision in columns)
    rows = [f"| component | {header} |", "|---|" + "---:|---:|---:|" * len(columns)]
    for case in args.cases:
        cells = []
        for device, precision in columns:
            repeats = args.repeats or (20 if device == "cuda" else 2)
            cells.append(run_in_subprocess(case, device, precision, args, repeats))
        rows.append(f"| {CASES[case]} | " + " | ".join(cells) + " |")
        print(rows[-1], flush=True)

    repeats = ", ".join(f"{d.upper()} {args.repeats or (20 if d == 'cuda' else 2)}" for d in args.devices)
    table = (
        f"Batch {args.batch}, {args.size}x{args.size}, {NUM_LABELS} labels, reference widths; one forward + "
        f"backward per step; median over timed steps ({repeats}) after one warm-up step. CPU: {cpu_name()}. "
        "Peak memory is the growth during the warm-up step: process peak RSS on CPU, the CUDA allocator's "
        "peak on CUDA; kept: the tensors autograd saves for the backward pass in that step's forward (distinct "
        "storages; in a training step they stay until the backward pass reaches them); bf16 = autocast.\n\n"
        + "\n".join(rows)
    )
    if not args.no_write:
        write_section(f"model:{machine()}", f"Model forward + backward: {machine()}", table)
    print(table)


if __name__ == "__main__":
    main()
