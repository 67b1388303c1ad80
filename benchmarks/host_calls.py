"""Host calls of one eager training step: every ATen call the step dispatches, by operator and by call site.

The eager GPU step waits on the host (docs/benchmarks.md: 166 ms of kernels in a 245 ms step), so the calls it
dispatches are what an eager speed-up has to remove; this counts them on any machine, the CPU included. The step
is the shipped recipe's as ``benchmarks.train`` times it (``step_overrides``), eager, at ``--crop`` pixels; the
sim batches come from the dataset's frames on the CPU and from the renderer on a GPU. ``--window convolution``
applies MS-SSIM's window as the GPU does (the CPU's default is banded products, ``gaussian_window``).

Usage (from the repository root)::

    python -m benchmarks.host_calls --data outputs/data/small --crop 128
    python -m benchmarks.host_calls --data DIR --crop 128 --window convolution --sites 30

On a CPU without bf16 instructions (no AVX512-BF16 or AMX) the bf16 step's convolutions are emulated and one step
takes many minutes; ``--precision 32-true`` counts far sooner there (the test's batch of 2 at 128 px in about 90 s),
without autocast's casts.

Prints the total, the most frequent operators and the call sites (the innermost ``triton_s2r`` frame; the backward
pass and the optimiser step count under the line that calls them). Writes nothing.
"""

from __future__ import annotations

import argparse
import collections
import functools
import traceback

import pytorch_lightning as pl
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from benchmarks.train import fit_one_epoch, step_overrides
from triton_s2r.losses import reconstruction

COUNTED_BATCH = 2  # after the first batches' one-off set-up


class CallCounter(TorchDispatchMode):
    """Counts every ATen call dispatched while active, by operator and by innermost ``triton_s2r`` frame."""

    def __init__(self) -> None:
        super().__init__()
        self.operators: collections.Counter[str] = collections.Counter()
        self.sites: collections.Counter[str] = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.operators[func.overloadpacket.__name__] += 1
        frames = [f for f in traceback.extract_stack() if "/triton_s2r/" in f.filename]
        site = f"{frames[-1].filename.split('/triton_s2r/')[-1]}:{frames[-1].lineno} {frames[-1].name}" if frames \
            else "(outside triton_s2r)"
        self.sites[site] += 1
        return func(*args, **(kwargs or {}))


class CountOneBatch(pl.Callback):
    """Counts the calls of training batch ``COUNTED_BATCH``."""

    def __init__(self) -> None:
        self.counter = CallCounter()

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx: int) -> None:
        if batch_idx == COUNTED_BATCH:
            self.counter.__enter__()

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx: int) -> None:
        if batch_idx == COUNTED_BATCH:
            self.counter.__exit__(None, None, None)


def count_step(data: str, batch: int, crop: int, precision: str) -> CallCounter:
    """The calls of one eager training step of the shipped recipe on ``data``."""
    overrides = [*step_overrides(data, batch), f"data.steps_per_epoch={COUNTED_BATCH + 1}", "data.num_workers=0",
                 f"trainer.precision={precision}", "system.compile=false",
                 f"system.resolution_schedule=[[0,{crop}]]", f"system.crop_size={crop}",
                 *([] if torch.cuda.is_available() else ["data.sim_source=frames"])]
    counting = CountOneBatch()
    fit_one_epoch(overrides, counting, "/tmp/bench_host_calls", precision)
    return counting.counter


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True, help="benchmark dataset folder")
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--crop", type=int, default=256, help="crop side in pixels (the recipe's: 256)")
    parser.add_argument("--precision", default="bf16-mixed")
    parser.add_argument("--window", choices=["default", "convolution"], default="default",
                        help="MS-SSIM's window: this device's default, or the convolution the GPU uses")
    parser.add_argument("--operators", type=int, default=12, help="operators shown")
    parser.add_argument("--sites", type=int, default=20, help="call sites shown")
    args = parser.parse_args()
    if args.window == "convolution":
        reconstruction.gaussian_window = functools.partial(reconstruction.gaussian_window, banded=False)
    counter = count_step(args.data, args.batch, args.crop, args.precision)
    print(f"ATen calls in one eager training step: {sum(counter.operators.values())}")
    print("operators: " + ", ".join(f"{name} {n}" for name, n in counter.operators.most_common(args.operators)))
    for site, n in counter.sites.most_common(args.sites):
        print(f"{n:6d}  {site}")


if __name__ == "__main__":
    main()
