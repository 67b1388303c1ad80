"""Seconds per batch of the README demo's training (``experiment=demo``) on this machine, per precision and variant.

The demo trains for a set time (14 minutes), so its batch time sets how many batches it trains. Each row trains
``--warmup`` untimed batches, then ``--steps`` timed ones (no validation, no checkpoints), on the device the demo
itself picks (a CUDA GPU if there is one, else the CPU, with the threads torch gives it).

Usage (from the repository root)::

    python -m benchmarks.demo_step --data outputs/data/small                 # fp32 and bf16 rows
    python -m benchmarks.demo_step --data DIR --precisions 32-true --variant wide \
        model.translator.generator_sim.base_channels=32                       # rows per variant

Writes the table into this machine's "demo-step:" section of docs/benchmarks.md (unless --no-write).
"""

from __future__ import annotations

import argparse

import torch

from benchmarks.report import machine, write_section
from benchmarks.train import StepTimer, fit_one_epoch
from triton_s2r.conf import cpu_has_bf16


def seconds_per_batch(data: str, precision: str, steps: int, warmup: int, extra: tuple[str, ...]) -> float:
    """Mean wall seconds of one demo batch at ``precision`` with the Hydra overrides ``extra``."""
    overrides = ["experiment=demo", f"data.root={data}", "data.build_preset=null",
                 f"data.steps_per_epoch={warmup + steps}", "data.val_frames=0", "data.val_sequence_frames=0",
                 "logger=none", "system.preview_every_n_batches=100000", *extra]
    timer = StepTimer(warmup)
    fit_one_epoch(overrides, timer, "/tmp/bench_demo_step", precision)
    return timer.seconds / timer.steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True, help="a benchmark dataset, e.g. the demo's outputs/data/small")
    parser.add_argument("--precisions", nargs="+", default=["32-true", "bf16-mixed"])
    parser.add_argument("--steps", type=int, default=30, help="timed batches per row")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--variant", nargs="+", action="append", default=[], metavar=("NAME", "OVERRIDE"),
                        help="rows for NAME: the demo with these Hydra overrides (repeatable; default: the demo only)")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    variants = [(v[0], tuple(v[1:])) for v in args.variant] or [("demo", ())]
    rows = ["| variant | precision | s/batch | batches in the demo's 14 minutes |", "|---|---|---|---|"]
    for name, extra in variants:
        for precision in args.precisions:
            seconds = seconds_per_batch(args.data, precision, args.steps, args.warmup, extra)
            rows.append(f"| {name} | {precision} | {seconds:.3f} | {14 * 60 / seconds:.0f} |")
            print(rows[-1], flush=True)
    device = torch.cuda.get_device_name() if torch.cuda.is_available() else (
        f"CPU, {torch.get_num_threads()} threads, bf16 instructions: {'yes' if cpu_has_bf16() else 'no'}")
    table = (f"The demo's training batch (`experiment=demo`: batch 4, 96 px whole frames, narrow networks), {device}; "
             f"mean over {args.steps} batches after {args.warmup} untimed ones, without validation. The last column "
             "leaves out validation and start-up.\n\n" + "\n".join(rows))
    if not args.no_write:
        write_section(f"demo-step:{machine()}", f"Demo training batch: {machine()}", table)
    print(table)


if __name__ == "__main__":
    main()
