"""Training-step speed: iterations/s, peak memory and FLOPs of the full TRITON step (D step + G/texture step).

The shipped recipe (``experiment=paper``: renderer in the loop with nvdiffrast on CUDA, reference networks,
pairs of neighbouring sim frames), 256x256 crops; variants compared in one run: batch 4 and 16 (the recipe's
batches hold whole pairs; the reference's batch 5 of independent frames is ``--batches 5 --variant
reference_batch data.sim_clip_frames=1``), fp32 and bf16, eager and compiled as the recipe compiles
(``torch.compile`` with CUDA graphs, half the activations kept for the backward pass).

Usage::

    python -m benchmarks.train --data DATASET_DIR                     # all variants on this machine's GPU
    python -m benchmarks.train --data DIR --batches 4 --precisions bf16-mixed --compile off --steps 20
    python -m benchmarks.train --data DIR --batches 4 --precisions bf16-mixed --compile off \
        --variant reference --variant l1_losses loss.criterion=l1 loss.content_criterion=l1   # rows per variant
    python -m benchmarks.train --data DIR --batches 4 --scaling 1 2            # DDP images/s on 1 and 2 GPUs
    python -m benchmarks.train --data DIR --batches 4 --precisions bf16-mixed --compile on \
        --variant recipe --variant all_kept system.activation_memory_budget=1   # the recipe keeps half (0.5)
    python -m benchmarks.train --data DIR --batches 4 --scaling 2 --profile    # where rank 0's DDP step goes

DATASET_DIR is any benchmark folder (states + baked assets + train_real photos), e.g. one built with
``triton-s2r make-dataset --preset tiny --resolution 256 --frames 48``.
"""

from __future__ import annotations

import argparse
import collections
import gc
import itertools
import os
import time
import traceback
import warnings

import pytorch_lightning as pl
import torch
from hydra import compose, initialize_config_module
from hydra.utils import instantiate

from benchmarks.report import machine, write_section
from triton_s2r.train import build

PROFILED_STEPS = 5

#: The compile phases printed, the longest first (Dynamo's timers: where a cold compile's time goes).
PHASES_SHOWN = 14


def synchronize() -> None:
    """Wait for the GPU's queued work, if there is a GPU."""
    if torch.cuda.is_available():
        torch.cuda.synchronize()


class StepTimer(pl.Callback):
    """Throughput of the training batches after ``warmup`` (on the GPU, or the CPU without one), optionally profiled.

    One synchronisation before the first timed batch and one after the last, so consecutive steps overlap as they
    do in a real run.
    """

    def __init__(self, warmup: int, profile: bool = False) -> None:
        self.warmup, self.seconds, self.steps, self._t0, self.peak_bytes = warmup, 0.0, 0, 0.0, 0
        self.warmup_seconds = 0.0  # the untimed first batches: CUDA and cuDNN set-up and, compiled, the compilation
        self.first_step_seconds = 0.0  # from the start of training to the end of the first batch
        self.profiler = None
        if profile:
            from torch.profiler import ProfilerActivity, schedule
            from torch.profiler import profile as torch_profile

            self.profiler = torch_profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                                          schedule=schedule(wait=warmup, warmup=1, active=PROFILED_STEPS))
            self.profiler.start()

    def on_train_batch_start(self, trainer, module, batch, batch_idx) -> None:
        if batch_idx == 0:
            self._t0 = time.perf_counter()
        if batch_idx == 1:
            synchronize()
            self.first_step_seconds = time.perf_counter() - self._t0
        if batch_idx == self.warmup:
            synchronize()
            if torch.cuda.is_available():
                torch.cuda.reset_peak_memory_stats()
            self.warmup_seconds = time.perf_counter() - self._t0
            self._t0 = time.perf_counter()

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx) -> None:
        if batch_idx >= self.warmup:
            self.steps += 1
        if self.profiler is not None:
            self.profiler.step()

    def on_train_epoch_end(self, trainer, module) -> None:
        synchronize()
        self.seconds = time.perf_counter() - self._t0
        # of the timed steps; reserved, not allocated, so that CUDA-graph memory pools (allocated while warming
        # up and held since) count
        self.peak_bytes = torch.cuda.max_memory_reserved() if torch.cuda.is_available() else 0

    def report(self, trace: str | None = None) -> str:
        """Tables of the profiled steps, then per step: GPU kernel time, GPU busy time and wall time.

        The busy time is the time the GPU was busy at all, the wall time that of the profiled window; busy well below
        wall means the host or synchronisations bound the step.

        Args:
            trace: also write the Chrome trace here (``.json.gz`` compresses it).
        """
        assert self.profiler is not None, "report() needs StepTimer(profile=True)"
        self.profiler.stop()
        if trace:
            self.profiler.export_chrome_trace(trace)
        averages = self.profiler.key_averages()
        # kernels only: an operator's own device time repeats that of the kernels it launched
        device_us = sum(e.self_device_time_total for e in averages
                        if e.device_type.name == "CUDA" and not e.is_user_annotation)
        host_us = sum(e.self_cpu_time_total for e in averages)
        kernels = sorted((e.time_range.start, e.time_range.end) for e in self.profiler.events()  # pyright: ignore[reportOptionalIterable]  # stopped: has events
                         if e.device_type.name == "CUDA" and not e.is_user_annotation)
        busy_us, end = 0.0, float("-inf")
        for start, stop in kernels:  # length of the union of the kernels' intervals
            busy_us += max(0.0, stop - max(start, end))
            end = max(end, stop)
        wall_us = kernels[-1][1] - kernels[0][0] if kernels else 0.0
        per_step = [x / PROFILED_STEPS / 1e3 for x in (device_us, busy_us, wall_us, host_us)]
        return (averages.table(sort_by="cuda_time_total", row_limit=25)
                + averages.table(sort_by="self_cpu_time_total", row_limit=25)
                + "\nper profiled step: GPU kernel time {:.1f} ms, GPU busy {:.1f} ms of {:.1f} ms from the first "
                  "kernel to the last, host time in operators {:.1f} ms\n".format(*per_step))


class SyncFinder(pl.Callback):
    """Python stacks of the calls that make the host wait for the GPU, counted over ``steps`` batches after ``warmup``.

    Found with ``torch.cuda.set_sync_debug_mode``: each such wait keeps the host from queueing work ahead.
    """

    def __init__(self, warmup: int, steps: int = 3) -> None:
        self.warmup, self.steps, self.stacks, self._show = warmup, steps, collections.Counter(), None

    def on_train_batch_start(self, trainer, module, batch, batch_idx) -> None:
        if batch_idx == self.warmup:
            warnings.simplefilter("always")
            self._show, warnings.showwarning = warnings.showwarning, self._record
            torch.cuda.set_sync_debug_mode("warn")
        elif batch_idx == self.warmup + self.steps:
            self._stop()

    def on_train_epoch_end(self, trainer, module) -> None:
        self._stop()

    def _stop(self) -> None:
        if self._show is not None:
            torch.cuda.set_sync_debug_mode("default")
            warnings.showwarning, self._show = self._show, None

    def _record(self, message, *args, **kwargs) -> None:
        if "synchronizing" not in str(message):
            assert self._show is not None  # _record is installed only with the previous showwarning kept
            self._show(message, *args, **kwargs)
            return
        self.stacks["".join(traceback.format_stack(limit=7)[:-2])] += 1

    def report(self) -> str:
        return "".join(f"\n{count / self.steps:.1f} per step:\n{stack}" for stack, count in self.stacks.most_common())


def step_flops(system, datamodule) -> float:
    """FLOPs of the forward pass and the generators' phase of one step, counted by PyTorch.

    The discriminators' phase adds about 1 % (``benchmarks.step_flops`` counts both phases, by network).
    """
    from torch.utils.flop_counter import FlopCounterMode

    batch = datamodule.transfer_batch_to_device(next(iter(datamodule.train_dataloader())), torch.device("cuda"), 0)
    with FlopCounterMode(display=False) as counter:
        out = system._forward(system._inputs(batch))
        terms = system._generator_terms(out)
        sum(terms.values()).backward()  # pyright: ignore[reportAttributeAccessIssue]  # a Tensor: terms are not empty
    return float(counter.get_total_flops())


def step_overrides(data: str, batch: int) -> list[str]:
    """Hydra overrides for the shipped recipe's training step as the step benchmarks measure it.

    ``data`` at batch ``batch``, 256x256 crops, every loss term from the first batch, no validation, logger or previews.
    """
    return ["experiment=paper", f"data.root={data}", "data.build_preset=null", f"data.batch_size={batch}",
            "system.resolution_schedule=[[0,256]]", "system.preview_every_n_batches=100000", "data.val_frames=0",
            "logger=none", "loss.surface_losses_from=0"]


def fit_one_epoch(overrides: list[str], callback: pl.Callback, root: str, precision: str = "32-true") -> None:
    """Train the ``train`` config with ``overrides`` for one epoch on this machine (a GPU if any, else the CPU).

    For benchmarks that watch the steps through ``callback``: no logger, checkpoints, progress bar, model summary or
    sanity validation; the run directory and Lightning's root are ``root``.
    """
    gpu = torch.cuda.is_available()
    with initialize_config_module("triton_s2r.conf", version_base="1.3"):
        cfg = compose("train", overrides=[*overrides, f"hydra.run.dir={root}"])
    datamodule, system = build(cfg)
    # precision: one of Lightning's precision names, checked by the Trainer (its type is a Literal).
    trainer = pl.Trainer(accelerator="gpu" if gpu else "cpu", devices=1, precision=precision, max_epochs=1,  # pyright: ignore[reportArgumentType]
                         logger=False, enable_checkpointing=False, enable_progress_bar=False,
                         enable_model_summary=False, callbacks=[callback], default_root_dir=root,
                         num_sanity_val_steps=0)
    trainer.fit(system, datamodule=datamodule)


def forget_earlier_rows() -> None:
    """Start a row as a fresh process would: without the compiled graphs, CUDA-graph pools and timers of earlier rows.

    Otherwise a row after a compiled one counts that row's CUDA-graph pools in its reserved memory and its compile
    timers in its own. Inductor's cache on disk stays, as it does between processes.
    """
    torch._dynamo.reset()  # also frees the CUDA-graph trees, which hold their pools for the life of the process
    torch._dynamo.utils.compilation_time_metrics.clear()
    torch._dynamo.utils.counters.clear()
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def run_variant(data: str, batch: int, precision: str, compile_: bool, steps: int, warmup: int,
                profile: bool = False, extra: tuple[str, ...] = (), devices: int = 1, trace: str | None = None) -> dict:
    """Time one configuration.

    ``extra``: Hydra overrides added last; ``profile``: print where its time goes (and write the Chrome trace to
    ``trace``).
    """
    overrides = [
        *step_overrides(data, batch), f"data.steps_per_epoch={(steps + warmup) * devices}", "data.num_workers=4",
        f"trainer.precision={precision}", f"system.compile={str(compile_).lower()}",
        "hydra.run.dir=/tmp/bench_train", *(["trainer=ddp"] if devices > 1 else []), *extra,
    ]
    forget_earlier_rows()
    with initialize_config_module("triton_s2r.conf", version_base="1.3"):
        cfg = compose("train", overrides=overrides)
    datamodule, system = build(cfg)
    timer = StepTimer(warmup, profile)
    syncs = SyncFinder(warmup + 1 + PROFILED_STEPS) if profile else None  # after the profiled steps
    strategy = instantiate(cfg.trainer.strategy) if devices > 1 else "auto"  # the strategy trainer=ddp trains with
    callbacks: list[pl.Callback] = [timer, *([syncs] if syncs else [])]
    # precision: one of Lightning's precision names, checked by the Trainer (its type is a Literal).
    trainer = pl.Trainer(accelerator="gpu", devices=devices, strategy=strategy, precision=precision, max_epochs=1,  # pyright: ignore[reportArgumentType]
                         logger=False, enable_checkpointing=False, enable_progress_bar=False, callbacks=callbacks,
                         default_root_dir="/tmp/bench_train",
                         use_distributed_sampler=False)  # each rank draws its own whole clips, as trainer=ddp
    trainer.fit(system, datamodule=datamodule)
    if profile and trainer.global_rank == 0:
        print(timer.report(trace))
        assert syncs is not None  # made when profiling
        print("host waits for the GPU (synchronising calls):", syncs.report() or " none")
    step = timer.seconds / timer.steps
    flops = step_flops(system.cuda(), datamodule) if not compile_ and devices == 1 else float("nan")
    if compile_ or torch._dynamo.utils.compilation_time_metrics:  # Dynamo's own timers (no public API)
        times = torch._dynamo.utils.compilation_time_metrics
        cudagraphs = {k: v for k, v in torch._dynamo.utils.counters["inductor"].items() if "cudagraph" in k}
        print(f"compiled graphs: {len(times.get('_compile.compile_inner', []))}, Dynamo + AOT + Inductor "
              f"{sum(times.get('_compile.compile_inner', [])):.0f} s forward, "
              f"{sum(times.get('compile_fx.<locals>.bw_compiler', [])):.0f} s backward; "
              f"CUDA-graph counters {cudagraphs or 'none'}", flush=True)
        phases = sorted(((sum(v), k) for k, v in times.items()), reverse=True)[:PHASES_SHOWN]
        print("compile phases, s (nested: a phase includes those it calls): "
              + ", ".join(f"{name} {seconds:.1f}" for seconds, name in phases), flush=True)
    return {"its": 1 / step, "ms": step * 1e3, "peak_gib": timer.peak_bytes / 2**30,
            "tflop": flops / 1e12, "warmup_s": timer.warmup_seconds, "first_s": timer.first_step_seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True, help="benchmark dataset folder")
    parser.add_argument("--batches", nargs="+", type=int, default=[4, 16],
                        help="batch sizes; the shipped recipe needs multiples of data.sim_clip_frames (2)")
    parser.add_argument("--precisions", nargs="+", default=["32-true", "bf16-mixed"])
    parser.add_argument("--compile", nargs="+", choices=["off", "on"], default=["off", "on"],
                        help="time the bf16 step eager (off), compiled (on) or both")
    parser.add_argument("--steps", type=int, default=30, help="timed steps per variant")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--peak-tflops", type=float, default=989.0, help="card's dense bf16 rate (H100 SXM: 989)")
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--profile", action="store_true",
                        help="instead: profile the first variant (first batch, bf16, first --compile; with --scaling "
                        "the largest GPU count, eager) and print where its time goes")
    parser.add_argument("--trace", default=None, help="with --profile: write the Chrome trace here (.json.gz)")
    parser.add_argument("--variant", nargs="+", action="append", default=[], metavar=("NAME", "OVERRIDE"),
                        help="rows for NAME: the step with these Hydra overrides (repeatable; default: the "
                        "reference step only), e.g. --variant channels_last system.channels_last=true")
    parser.add_argument("--scaling", nargs="+", type=int, default=None, metavar="DEVICES",
                        help="instead: DDP scaling of the bf16 step over these GPU counts, e.g. 1 2 (with the first "
                        "--variant's overrides)")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        parser.error("this times the training step on a CUDA GPU, and torch sees none here; on the CPU, "
                     "`python -m benchmarks.demo_step --data DIR` times the demo's step")
    run_rows(args)


def run_rows(args: argparse.Namespace) -> None:
    """The rows (or the profile, or the scaling table) that ``args`` ask for; the table printed and written."""
    variants = [(v[0], tuple(v[1:])) for v in args.variant] or [("reference", ())]
    if args.scaling:
        scaling(args, variants[0][1])
        return
    if args.profile:
        run_variant(args.data, args.batches[0], "bf16-mixed", args.compile[0] == "on", 1 + PROFILED_STEPS + 3,
                    args.warmup, profile=True, extra=variants[0][1], trace=args.trace)
        return
    rows = ["| variant | batch | precision | compile | it/s | ms/step | peak reserved GiB | TFLOP/step "
            "| % of bf16 peak | first step s | warm-up s |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for (name, extra), batch, precision in itertools.product(variants, args.batches, args.precisions):
        # compile only where it matters: the bf16 step
        for compile_ in [c == "on" for c in args.compile] if precision == "bf16-mixed" else [False]:
            try:
                # product's overloads cannot tell the element types apart from argparse's Any lists.
                r = run_variant(args.data, batch, precision, compile_, args.steps, args.warmup, extra=extra)  # pyright: ignore[reportArgumentType]
            except Exception as exc:  # one failing variant (e.g. out of memory) must not lose the others
                rows.append(f"| {name} | {batch} | {precision} | {compile_} | failed: {type(exc).__name__} "
                            "| | | | | | |")
                traceback.print_exc()
                print(rows[-1], exc, flush=True)
                continue
            util = r["tflop"] / (r["ms"] / 1e3) / args.peak_tflops * 100
            rows.append(f"| {name} | {batch} | {precision} | {compile_} | {r['its']:.1f} | {r['ms']:.1f} | "
                        f"{r['peak_gib']:.2f} | {r['tflop']:.2f} | {util:.1f} | {r['first_s']:.0f} | "
                        f"{r['warmup_s']:.0f} |")
            print(rows[-1], flush=True)
    table = ("Full step (renderer in the loop with nvdiffrast, D step + G/texture step), reference networks, "
             "256x256 crops, neural texture evaluated per pixel, compiled as experiment=paper (CUDA graphs, activation "
             "memory budget 0.5) unless a variant says otherwise; throughput over the timed steps (synchronised only "
             "before the first and after the last). FLOPs counted by torch.utils.flop_counter (convolutions and "
             "matmuls) for the uncompiled step's forward pass and generators' phase. First step s: from the start of "
             f"training to the end of the first batch; warm-up s: the untimed first {args.warmup} steps (CUDA and "
             "cuDNN set-up and, compiled, the compilation).\n\n" + "\n".join(rows))
    if not args.no_write:
        write_section(f"train:{machine()}", f"Training step: {machine()}", table)
    print(table)


def scaling(args: argparse.Namespace, extra: tuple[str, ...]) -> None:
    """Images/s of the bf16 step on 1..N GPUs (same batch per GPU) and the scaling efficiency; ``extra``: overrides."""
    if args.profile:  # where the step of the largest count goes, as rank 0 sees it
        run_variant(args.data, args.batches[0], "bf16-mixed", False, 1 + PROFILED_STEPS + 3, args.warmup,
                    profile=True, extra=extra, devices=max(args.scaling), trace=args.trace)
        return
    rows = ["| GPUs | batch per GPU | it/s | images/s | efficiency |", "|---|---|---|---|---|"]
    base = None
    for devices in args.scaling:
        r = run_variant(args.data, args.batches[0], "bf16-mixed", False, args.steps, args.warmup, extra=extra,
                        devices=devices)
        if int(os.environ.get("LOCAL_RANK", "0")) != 0:
            continue
        images = r["its"] * devices * args.batches[0]
        if devices == 1:
            base = images
        # Against the single GPU of this invocation only: machines of one kind differ by up to a quarter.
        efficiency = "n/a (no 1-GPU row before it)" if base is None else f"{images / (devices * base) * 100:.0f}%"
        rows.append(f"| {devices} | {args.batches[0]} | {r['its']:.2f} | {images:.1f} | {efficiency} |")
        print(rows[-1], flush=True)
    if int(os.environ.get("LOCAL_RANK", "0")) == 0:
        step = f"overrides {' '.join(extra)}" if extra else "eager"
        table = (f"DDP (Lightning, NCCL), the shipped recipe (`experiment=paper`), bf16, {step}, renderer in the loop, "
                 "256x256 crops; surface consistency is computed per rank over its own batch.\n\n" + "\n".join(rows))
        host = f"{max(args.scaling)}x {machine()} (one host)"
        if not args.no_write:
            write_section(f"ddp:{host}", f"Multi-GPU scaling: {host}", table)
        print(table)


if __name__ == "__main__":
    main()
