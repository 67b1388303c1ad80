"""The results table: every method trained under the same wall-clock budget on one dataset, then evaluated.

Usage::

    python -m benchmarks.results --data outputs/data/full --budget-seconds 3600      # one GPU
    python -m benchmarks.results --data DIR --budget-seconds 90 --methods triton no_texture --out /tmp/r.md
    python -m benchmarks.results --data DIR --methods triton \
        --variant triton_tr0 loss.loss_weights.texture_reality=0      # extra rows: a method plus overrides
    python -m benchmarks.results --data DIR --budget-seconds 390 --methods triton no_texture --concurrent

Each method is ``triton-s2r train`` with the base recipe below plus the method's experiment (``triton``: the
defaults, i.e. full TRITON), stopped by Lightning's ``max_time``; then ``triton-s2r eval`` on the same
dataset. The unpaired methods render their sim batches in the loop on a GPU (train_sim states); the paired
``oracle`` reads the UVL frames and photos of train_real. Writes a markdown table (docs/results.md by
default) with the card, command, date and commit.
"""

from __future__ import annotations

import argparse
import datetime
import json
import shlex
import subprocess
import sys
import time
from pathlib import Path

import torch

from benchmarks.report import commit, machine

METHODS = {  # method -> extra overrides
    "triton": [],
    "no_texture": ["experiment=no_texture"],
    "texture_only": ["experiment=texture_only"],
    "raster_texture": ["experiment=raster_texture"],
    "oracle": ["experiment=oracle"],
}
COLUMNS = ("psnr", "psnr_masked", "ssim", "ssim_masked", "surface_consistency", "warp_error")


def base_overrides(data: str, budget_seconds: int, run_dir: Path, gpu: bool, paired: bool) -> list[str]:
    hours, rest = divmod(budget_seconds, 3600)
    return [
        f"data.root={data}", "data.build_preset=null",
        f"data.sim_source={'render' if gpu and not paired else 'frames'}",
        "data.steps_per_epoch=50", "data.num_workers=4", f"trainer={'gpu' if gpu else 'cpu'}",
        "trainer.max_epochs=100000", f"+trainer.max_time=00:{hours:02d}:{rest // 60:02d}:{rest % 60:02d}",
        "trainer.enable_progress_bar=false", "logger=csv", "system.crop_size=256",
        "system.resolution_schedule=[[0,256]]",
        "system.preview_every_n_batches=500", f"hydra.run.dir={run_dir}",
    ]


def train_in_turn(commands: dict[str, list[str]]) -> dict[str, float]:
    """Run the training commands one after the other; wall seconds of each."""
    seconds = {}
    for method, command in commands.items():
        start = time.perf_counter()
        subprocess.run(command, check=True)
        seconds[method] = time.perf_counter() - start
    return seconds


def train_concurrently(commands: dict[str, list[str]]) -> dict[str, float]:
    """Start every training command at once; wall seconds of each, from the common start to its own end."""
    start = time.perf_counter()
    processes = {method: subprocess.Popen(command) for method, command in commands.items()}
    seconds = {}
    while len(seconds) < len(processes):
        for method, process in processes.items():
            if method not in seconds and process.poll() is not None:
                if process.returncode:
                    raise subprocess.CalledProcessError(process.returncode, commands[method])
                seconds[method] = time.perf_counter() - start
        time.sleep(1.0)
    return {method: seconds[method] for method in commands}  # in the order given


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True, help="benchmark dataset with a paired test split and sequences")
    parser.add_argument("--budget-seconds", type=int, default=3600, help="training wall-clock budget per method")
    parser.add_argument("--methods", nargs="*", default=list(METHODS), choices=list(METHODS))
    parser.add_argument("--runs", type=Path, default=Path("outputs/results"), help="where the runs go")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent.parent / "docs" / "results.md")
    parser.add_argument("--cpu", action="store_true", help="train on the CPU (frames instead of rendering)")
    parser.add_argument("--concurrent", action="store_true",
                        help="train all methods at once on the one GPU (each gets a share of it for the same time)")
    parser.add_argument("--variant", nargs="+", action="append", default=[], metavar=("NAME", "OVERRIDE"),
                        help="an extra row: NAME, then Hydra overrides added to full TRITON's (repeatable)")
    args = parser.parse_args()

    runs = [(method, METHODS[method]) for method in args.methods] + [(v[0], v[1:]) for v in args.variant]
    commands = {method: [sys.executable, "-m", "triton_s2r.train",
                         *base_overrides(args.data, args.budget_seconds, args.runs / method, not args.cpu,
                                         method == "oracle"), *overrides]
                for method, overrides in runs}
    train_seconds = (train_concurrently if args.concurrent else train_in_turn)(commands)
    rows = []
    for method, seconds in train_seconds.items():
        run_dir = args.runs / method
        metrics_path = run_dir / "metrics.json"
        subprocess.run([sys.executable, "-m", "triton_s2r.cli", "eval", str(run_dir), args.data, "--out",
                        str(metrics_path)], check=True)
        result = json.loads(metrics_path.read_text())
        state = torch.load(run_dir / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=True)
        batches = int(state["state_dict"]["batches_done"])
        rows.append((method, result, seconds, batches))
        print(f"| {method} | " + " | ".join(f"{result[k]:.4f}" for k in COLUMNS) + f" | {seconds:.0f} | {batches} |",
              flush=True)

    header = "| method | " + " | ".join(COLUMNS) + " | train wall s | batches |"
    lines = [header, "|" + "---|" * (len(COLUMNS) + 3)]
    for method, result, seconds, batches in rows:
        values = " | ".join(f"{result[k]:.4f}" for k in COLUMNS)
        lines.append(f"| {method} | {values} | {seconds:.0f} | {batches} |")
    names = list(rows[0][1]["psnr_by_label"])
    by_label = ["| method | " + " | ".join(names) + " |", "|" + "---|" * (len(names) + 1)]
    for method, result, _, _ in rows:
        values = (result["psnr_by_label"][n] for n in names)
        by_label.append(f"| {method} | " + " | ".join("n/a" if v is None else f"{v:.2f}" for v in values) + " |")
    real = rows[0][1]
    text = (
        f"# Results\n\n- card: {machine()}\n- command: `python -m benchmarks.results "
        f"{' '.join(shlex.quote(a) for a in sys.argv[1:])}`\n- date: {datetime.date.today().isoformat()}, "
        f"commit {commit()}\n- dataset: {args.data}; budget {args.budget_seconds} s of training per method\n\n"
        "PSNR and SSIM: higher is better (translation vs the paired path-traced frame); `_masked`: objects and "
        "robot only. Surface consistency and warp error: lower is better; the real frames' own levels are "
        f"{real['surface_consistency_real']:.4f} and {real['warp_error_real']:.4f}.\n\n" + "\n".join(lines) + "\n"
        "\nPSNR per label (dB, `psnr_by_label`):\n\n" + "\n".join(by_label) + "\n"
    )
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
