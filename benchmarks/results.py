"""The results table: every method trained under the same wall-clock budget on one dataset, then evaluated.

Usage::

    python -m benchmarks.results --data outputs/data/full --budget-seconds 3600      # one GPU
    python -m benchmarks.results --data DIR --budget-seconds 90 --methods triton no_texture --out /tmp/r.md
    python -m benchmarks.results --data DIR --methods triton \
        --variant triton_tr0 loss.loss_weights.texture_reality=0      # extra rows: a method plus overrides
    python -m benchmarks.results --data DIR --budget-seconds 390 --methods triton no_texture --concurrent
    python -m benchmarks.results --data DIR --budget-seconds 420 --methods triton no_texture --seeds 0 1 2 \
        --concurrent                                # six runs at once, spread over every visible GPU
    python -m benchmarks.results --data DIR --budget-seconds 1200 --methods triton no_texture --seeds 0 1 2 3 \
        --concurrent --compile      # compiled: one untimed run per method fills the compile cache first
    python -m benchmarks.results --data DIR --methods triton --concurrent --compile \
        --compile-cache CACHE       # ... and keeps each row's compiled pieces in CACHE/NAME.bin for other machines
    python -m benchmarks.results --data DIR --budget-seconds 1200 --methods triton oracle --seeds 0 1 \
        --concurrent --compile --compile-in-background   # no untimed runs: each trains eagerly while it compiles
    python -m benchmarks.results --data outputs/data/small --recipe demo --methods triton --seeds 0 1 2 \
        --variant triton_g1 loss.r1_gamma=1 --concurrent    # the README demo's recipe (600 batches), on a GPU
    python -m benchmarks.results --data DIR --budget-seconds 450 --methods triton --seeds 0 1 --concurrent \
        --compile --variant NAME OVERRIDES   # time to quality: when each run first reaches the defaults' end

Each run is ``triton-s2r train`` with the base recipe below plus the method's experiment (``triton``: the defaults,
i.e. full TRITON) and ``seed=S``, stopped by Lightning's ``max_time``; then ``triton-s2r eval`` on the same dataset.
With ``--recipe demo`` each run is instead the README demo's training (``experiment=demo``, its 600 batches of whole
frames at 96 px; no time budget), for many seeds of the CPU main job at once on a GPU. The unpaired methods render
their sim batches in the loop on a GPU (train_sim states); the paired ``oracle`` reads the UVL frames and photos of
train_real. Runs go to the visible GPUs in turn (``CUDA_VISIBLE_DEVICES``); without ``--concurrent`` each GPU trains
one run at a time. Writes a markdown file (``RUNS/results.md`` by default, beside the runs) with the card, command,
date and commit: one row per run, and with several seeds the mean and standard deviation of each method over them, the
validation curves' points, and the time to quality (when each run's validation first reached the first row's mean
quality at the end of its runs); with ``--pictures`` also the first seed's translations of three test frames and its
textures (``benchmarks.pictures``). The file is written again as each run finishes, marked partial until the last has
(so a session that ends early keeps what finished). Rerun with the same ``--runs`` after an interruption, it keeps
every run that finished training (and every evaluation that finished) and redoes only the rest. A run that fails (its
card out of memory, say) stops no other: the table holds the runs that finished and names the failed ones with the
reason, and the command exits with an error. With ``--concurrent --compile`` (not ``--compile-in-background``) it
first checks, from the compile runs' peak memory, that every GPU holds its runs at once, and stops with advice before
the timed runs if one does not (a compiled ``triton`` run of this recipe holds about 14.5 GiB: nine fit a 140 GiB
card, twelve do not; ``no_texture`` and ``oracle`` runs hold less).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import queue
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

import torch

from benchmarks.pictures import FRAMES, make_pictures
from benchmarks.report import commit, machine
from benchmarks.result_tables import (
    COLUMNS,
    DOWNSTREAM_COLUMNS,
    Outcome,
    Run,
    cell,
    failures_section,
    report,
    run_row,
)
from triton_s2r.runs.run_dir import RunDir, load_checkpoint
from triton_s2r.training.curves import read_curves
from triton_s2r.utils.files import atomic_write

METHODS = {  # method -> extra overrides
    "triton": [],
    "no_texture": ["experiment=no_texture"],
    "texture_only": ["experiment=texture_only"],
    "raster_texture": ["experiment=raster_texture"],
    "oracle": ["experiment=oracle"],
    "cyclegan": ["experiment=cyclegan"],
    "shaded": ["experiment=shaded"],
}

#: Downstream sources trained once per seed besides the runs: the real frames (ceiling) and the raw UVL image.
DOWNSTREAM_REFERENCES = ("real", "sim")


def failure_reason(run: Run, error: subprocess.CalledProcessError) -> str:
    """Why a run's training or evaluation failed, from the tail of its ``train.log``, with what to do about it."""
    log = RunDir(run.run_dir).log_path
    tail = log.read_text(errors="replace")[-20000:] if log.is_file() else ""
    if "OutOfMemoryError" in tail or "out of memory" in tail:
        return (f"out of GPU memory ({log}): too many runs share the card; give fewer rows or seeds per GPU, "
                "or more GPUs, or drop --concurrent")
    step = "training" if "triton_s2r.train" in error.cmd else f"`triton-s2r {error.cmd[3]}`"
    return f"{step} exited with status {error.returncode} (its output: this command's log; the run's: {log})"


#: Besides what torch's allocator reserves, each training process's CUDA context holds about half a GiB.
CONTEXT_GIB = 0.6


def memory_shortfalls(loads: dict[str, list[str]], peaks: dict[str, float],
                      capacity_gib: dict[str, float]) -> list[str]:
    """The GPUs that cannot hold their runs at once, one line each.

    Args:
        loads: GPU -> the row names of the runs it trains at once (a name once per seed).
        peaks: row name -> the peak memory (GiB) its compile run reserved; rows without one count their context only.
        capacity_gib: GPU -> its memory (GiB).
    """
    lines = []
    for gpu, names in loads.items():
        need = sum(peaks.get(name, 0.0) + CONTEXT_GIB for name in names)
        if need > capacity_gib[gpu]:
            rows = ", ".join(f"{name} {peaks[name]:.1f} GiB x{names.count(name)}"
                             for name in dict.fromkeys(names) if name in peaks)
            lines.append(f"GPU {gpu} ({capacity_gib[gpu]:.0f} GiB) would need {need:.0f} GiB for its {len(names)} runs "
                         f"at once ({rows}, and {CONTEXT_GIB} GiB of CUDA context each)")
    return lines


def check_memory(runs: Sequence[tuple[Run, str | None]], runs_dir: Path, gpus: Sequence[str | None]) -> None:
    """Stop before the timed runs if a GPU cannot hold its concurrent runs (their rows' compile-run peaks)."""
    peaks = {name: peak for name in {run.name for run, _ in runs}
             if (peak := RunDir(runs_dir / "compile-cache" / name).status().get("peak_gpu_memory_gib")) is not None}
    loads: dict[str, list[str]] = {}
    for run, gpu in runs:
        loads.setdefault(str(gpu), []).append(run.name)
    capacity = {str(gpu): torch.cuda.get_device_properties(i).total_memory / 2**30 for i, gpu in enumerate(gpus)}
    if shortfalls := memory_shortfalls(loads, peaks, capacity):
        sys.exit("\n".join(shortfalls) + "\nTrain fewer rows or seeds per GPU, use more GPUs, or drop --concurrent "
                 "(one run at a time per GPU); the compile cache is kept for the next try.")


RECIPES = ("benchmark", "demo")


#: The demo's recipe trains for a set time; side by side on a shared card each run trains a set number of batches
#: instead: 600 (12 epochs of 50), as the demo did before its time budget.
DEMO_BATCHES = ("trainer.max_epochs=12", "trainer.max_time=null")


def epoch_batches(budget_seconds: int) -> int:
    """Batches per epoch of a run of ``budget_seconds``: 50, and 50 more per 150 s of budget (450 for 20 minutes).

    Every epoch ends with a validation and two or three checkpoint writes, about 4.4 s on a GPU: with epochs of 50
    batches a compiled run spent nearly half its time on them (docs/benchmarks.md). Longer epochs for longer
    budgets keep that to about a tenth while the curves still get a dozen points or more.
    """
    return 50 * (1 + budget_seconds // 150)


def base_overrides(data: str, budget_seconds: int, run_dir: Path, gpu: bool, paired: bool,
                   compile_: bool = False, epochs: int = 100000, recipe: str = "benchmark") -> list[str]:
    """The recipe every run shares.

    ``compile_``: compiled with CUDA graphs, half the activations kept (as ``experiment=paper``); ``epochs``: the
    most epochs (``epoch_batches`` each), when the time budget does not end the run first. ``recipe="demo"``: the
    README demo's training instead (``experiment=demo``, its 600 batches (``DEMO_BATCHES``), frames and precision;
    ``budget_seconds`` and ``epochs`` unused).
    """
    if recipe == "demo":
        return [f"data.root={data}", "data.build_preset=null", "experiment=demo", "trainer.enable_progress_bar=false",
                *DEMO_BATCHES, f"hydra.run.dir={run_dir}"]
    hours, rest = divmod(budget_seconds, 3600)
    return [
        f"data.root={data}", "data.build_preset=null",
        f"data.sim_source={'render' if gpu and not paired else 'frames'}",
        f"data.steps_per_epoch={epoch_batches(budget_seconds)}", "data.num_workers=4",
        f"trainer={'gpu' if gpu else 'cpu'}",
        f"trainer.max_epochs={epochs}", f"+trainer.max_time=00:{hours:02d}:{rest // 60:02d}:{rest % 60:02d}",
        "trainer.enable_progress_bar=false", "logger=csv", "system.crop_size=256",
        "system.resolution_schedule=[[0,256]]",
        "system.preview_every_n_batches=500", f"hydra.run.dir={run_dir}",
        *(["system.compile=true", "system.compile_mode=reduce-overhead", "system.activation_memory_budget=0.5"]
          if compile_ else []),
    ]


def run_env(gpu: str | None, threads: int) -> dict[str, str]:
    """The environment of a run's processes: ``threads`` CPU threads, and only GPU ``gpu`` visible (if any)."""
    return dict(os.environ, OMP_NUM_THREADS=str(threads), **({"CUDA_VISIBLE_DEVICES": gpu} if gpu is not None else {}))


def train_once(overrides: list[str], marker: Path, env: dict[str, str]) -> float:
    """Wall seconds of ``triton-s2r train OVERRIDES``, run only if ``marker`` (which keeps them) is missing."""
    if not marker.is_file():  # written when training ends: a rerun skips finished training
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "triton_s2r.train", *overrides], check=True, env=env)
        with atomic_write(marker) as tmp:
            tmp.write_text(f"{time.perf_counter() - start:.1f}\n")
    return float(marker.read_text())


def compile_cache_file(folder: Path, row: str) -> Path:
    """The compiled pieces of ``row`` in ``folder``; a new row's file starts as a copy of ``triton``'s, if any.

    Variants are full TRITON with overrides, so most of their pieces are TRITON's; their runs compile only what
    differs and write their own file.
    """
    path, base = (folder / f"{row}.bin").absolute(), folder / "triton.bin"
    if not path.is_file() and base.is_file():
        shutil.copyfile(base, path)
    return path


def fill_compile_cache(rows: list[tuple[str, list[str]]], data: str, runs: Path, gpus: Sequence[str | None],
                       threads: int) -> None:
    """Compile each row's step once, all rows at once over the GPUs, in a one-epoch run per row.

    Inductor keeps what it compiled on disk (its cache), so the timed runs of the same shapes start in seconds
    instead of spending minutes of their budget compiling. The surface losses join from the second batch, so that
    the pieces they call compile here too. A row whose warm-up finished before is skipped.
    """

    def warm(index: int, name: str, overrides: list[str]) -> None:
        run_dir, gpu = runs / "compile-cache" / name, gpus[index % len(gpus)]
        seconds = train_once([*base_overrides(data, 3600, run_dir, gpu is not None, name == "oracle", True, epochs=1),
                              *overrides, "data.steps_per_epoch=50", "loss.surface_losses_from=1"],
                             run_dir / "done.txt", run_env(gpu, threads))
        print(f"{name}: compiled in a one-epoch run of {seconds:.0f} s", flush=True)

    with ThreadPoolExecutor(max_workers=len(rows)) as pool:
        for future in [pool.submit(warm, i, name, overrides) for i, (name, overrides) in enumerate(rows)]:
            future.result()


def train_and_evaluate(run: Run, data: str, budget_seconds: int, gpu: str | None, threads: int,
                       downstream: bool, compile_: bool = False, recipe: str = "benchmark") -> Outcome:
    """Train ``run`` with ``threads`` CPU threads, then evaluate it.

    It trains on GPU index ``gpu`` (the CPU when None), compiled when ``compile_``, with ``recipe`` (see
    ``base_overrides``), and a
    pose regressor on its translations when ``downstream``.
    """
    env = run_env(gpu, threads)
    seconds = train_once([*base_overrides(data, budget_seconds, run.run_dir, gpu is not None, run.name == "oracle",
                                          compile_, recipe=recipe), *run.overrides, f"seed={run.seed}"],
                         run.run_dir / "train_seconds.txt", env)
    metrics_path = run.run_dir / "metrics.json"
    if not metrics_path.is_file() or "haarpsi" not in json.loads(metrics_path.read_text()):
        subprocess.run([sys.executable, "-m", "triton_s2r.cli", "eval", str(run.run_dir), data, "--out",
                        str(metrics_path)], check=True, env=env)
    result = json.loads(metrics_path.read_text())
    if downstream:
        result.update(downstream_metrics(str(run.run_dir), data, run.seed, run.run_dir / "downstream.json", env))
    run_dir = RunDir(run.run_dir)
    state = load_checkpoint(run_dir.last)
    curves = read_curves(run_dir.curves_path)
    # A run resumed across calls: this process timed only its last part, the run's own clock goes on.
    seconds = curves[-1]["wall_s"] if curves else seconds
    outcome = Outcome(run, result, seconds, int(state["state_dict"]["batches_done"]), curves)
    print(run_row(outcome), flush=True)
    return outcome


def downstream_metrics(source: str, data: str, seed: int, out: Path, env: dict | None = None) -> dict:
    """``DOWNSTREAM_COLUMNS`` of ``triton-s2r downstream DATA --train-on SOURCE``, kept in ``out`` for reruns."""
    if not out.is_file():
        out.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "triton_s2r.cli", "downstream", data, "--train-on", source,
                        "--seed", str(seed), "--out", str(out)], check=True, env=env)
    result = json.loads(out.read_text())
    return {k: result[k] for k in DOWNSTREAM_COLUMNS}


def downstream_references(data: str, seeds: Sequence[int], runs: Path, env: dict[str, str]) -> str:
    """The results' section of the downstream references (``DOWNSTREAM_REFERENCES``), one row per source and seed.

    They need no run, so ``main`` trains them while the runs compile and train: a call on a lent GPU then ends
    with the runs' own evaluations, not with these.
    """
    lines = ["| train on | seed | " + " | ".join(DOWNSTREAM_COLUMNS) + " |",
             "|" + "---|" * (len(DOWNSTREAM_COLUMNS) + 2)]
    for source in DOWNSTREAM_REFERENCES:
        for seed in seeds:
            values = downstream_metrics(source, data, seed, runs / f"downstream-{source}-seed{seed}.json", env)
            lines.append(f"| {source} | {seed} | " + " | ".join(cell(values[k]) for k in DOWNSTREAM_COLUMNS) + " |")
    return ("Downstream references (`triton-s2r downstream DATA --train-on real|sim`): the pose regressor trained on "
            "the real frames (the ceiling) and on the raw UVL images (the floor):\n\n" + "\n".join(lines) + "\n\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True, help="benchmark dataset with a paired test split and sequences")
    parser.add_argument("--budget-seconds", type=int, default=3600, help="training wall-clock budget per run")
    parser.add_argument("--methods", nargs="*", default=list(METHODS), choices=list(METHODS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0], help="train every row once per seed")
    parser.add_argument("--runs", type=Path, default=Path("outputs/results"), help="where the runs go")
    parser.add_argument("--out", type=Path, help="the markdown table (default: RUNS/results.md)")
    parser.add_argument("--pictures", type=Path, metavar="FOLDER/NAME",
                        help="also write NAME_frames.jpg and NAME_textures.jpg of the first seed's runs, a column "
                             "(and a texture row) per row of the table (benchmarks.pictures)")
    parser.add_argument("--cpu", action="store_true", help="train on the CPU (frames instead of rendering)")
    parser.add_argument("--concurrent", action="store_true",
                        help="train all runs at once, spread over the visible GPUs (each gets a share of its GPU "
                             "for the same time); otherwise one run at a time per GPU")
    parser.add_argument("--downstream", action="store_true",
                        help="also train `triton-s2r downstream` pose regressors on each run's translations, and on "
                             "the real frames and the UVL images once per seed (joint_error_deg, ...)")
    parser.add_argument("--variant", nargs="+", action="append", default=[], metavar=("NAME", "OVERRIDE"),
                        help="an extra row: NAME, then Hydra overrides added to full TRITON's (repeatable)")
    parser.add_argument("--compile", action="store_true",
                        help="GPU: train compiled with CUDA graphs (about twice the eager batches), after one "
                             "untimed one-epoch run per row that fills the compile cache (see --compile-in-background)")
    parser.add_argument("--compile-cache", type=Path, metavar="DIR",
                        help="with --compile: each row's runs load and write its compiled pieces in DIR/NAME.bin "
                             "(system.compile_cache_file); a --variant row without a file starts from a copy of "
                             "DIR/triton.bin. Copy DIR to a fresh machine with the same torch and GPU, and its "
                             "compile runs take seconds instead of minutes")
    parser.add_argument("--compile-in-background", action="store_true",
                        help="with --compile: no untimed compile runs first; every run trains eagerly from its first "
                             "second while a child process compiles its pieces (system.compile_in_background), so "
                             "its budget includes the compile, as a first run on a fresh machine does")
    parser.add_argument("--recipe", choices=RECIPES, default="benchmark",
                        help="benchmark: the base recipe above, stopped by --budget-seconds; demo: the README demo's "
                             "training (experiment=demo, 600 batches; full TRITON and its variants only)")
    args = parser.parse_args()
    if args.compile and args.cpu:
        parser.error("--compile is for GPU runs")
    if args.compile_cache and not args.compile:
        parser.error("--compile-cache keeps what --compile compiles: add --compile")
    if args.compile_in_background and not args.compile:
        parser.error("--compile-in-background is a way to --compile: add --compile")
    if args.recipe == "demo" and (args.compile or args.downstream or set(args.methods) - {"triton"}):
        parser.error("--recipe demo trains experiment=demo: use --methods triton and --variant rows, without "
                     "--compile and --downstream")
    if not args.cpu and torch.cuda.device_count() == 0:
        parser.error("torch sees no CUDA GPU here: add --cpu to train on the CPU (from the dataset's frames "
                     "instead of the renderer)")

    rows = [(method, METHODS[method]) for method in args.methods] + [(v[0], v[1:]) for v in args.variant]
    if args.compile_cache:
        rows = [(name, [*overrides, f"system.compile_cache_file={compile_cache_file(args.compile_cache, name)}"])
                for name, overrides in rows]
    if args.compile_in_background:
        rows = [(name, [*overrides, "system.compile_in_background=true"]) for name, overrides in rows]
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")  # a run's CUDA_VISIBLE_DEVICES names one of these
    gpus = [None] if args.cpu else (visible.split(",") if visible else
                                    [str(i) for i in range(torch.cuda.device_count())])
    # Row r with the s-th seed goes to GPU (r + s) mod n, so every GPU hosts a mix of rows.
    runs = [(Run(name, seed, tuple(overrides), args.runs / f"{name}-seed{seed}"), gpus[(r + s) % len(gpus)])
            for s, seed in enumerate(args.seeds) for r, (name, overrides) in enumerate(rows)]
    workers = len(runs) if args.concurrent else len(gpus)
    threads = max(1, len(os.sched_getaffinity(0)) // workers)  # runs at once share the cores, not oversubscribe
    references_pool = ThreadPoolExecutor(max_workers=1)
    references = (references_pool.submit(downstream_references, args.data, args.seeds, args.runs,
                                          run_env(gpus[0], threads)) if args.downstream else None)
    if args.compile and not args.compile_in_background:
        fill_compile_cache(rows, args.data, args.runs, gpus, threads)
        if args.concurrent:
            check_memory(runs, args.runs, gpus)
    free_gpus: queue.Queue = queue.Queue()
    for gpu in gpus:
        free_gpus.put(gpu)

    def on_next_free_gpu(run: Run) -> Outcome:
        gpu = free_gpus.get()
        try:
            return train_and_evaluate(run, args.data, args.budget_seconds, gpu, threads, args.downstream,
                                      args.compile, args.recipe)
        finally:
            free_gpus.put(gpu)

    with ThreadPoolExecutor(max_workers=workers) as pool:
        if args.concurrent:
            futures = [pool.submit(train_and_evaluate, run, args.data, args.budget_seconds, gpu, threads,
                                   args.downstream, args.compile, args.recipe) for run, gpu in runs]
        else:
            futures = [pool.submit(on_next_free_gpu, run) for run, _ in runs]
        header = (
            f"# Results\n\n- card: {machine()} x{len(gpus)}\n- command: `python -m benchmarks.results "
            f"{' '.join(shlex.quote(a) for a in sys.argv[1:])}`\n- date: {datetime.date.today().isoformat()}, "
            f"commit {commit()}\n- dataset: {args.data}; "
            + (f"budget {args.budget_seconds} s of training per run" if args.recipe == "benchmark" else
               "the README demo's training per run (`experiment=demo`, 600 batches unless a row overrides them: see "
               "the batches column)") + "\n\n")
        columns = COLUMNS + (DOWNSTREAM_COLUMNS if args.downstream else ())
        out = args.out or args.runs / "results.md"
        out.parent.mkdir(parents=True, exist_ok=True)
        finished: dict[int, Outcome] = {}  # by the run's place in ``runs``, the table's order
        failures: list[tuple[Run, str]] = []
        index = {future: i for i, future in enumerate(futures)}
        for future in as_completed(futures):
            run = runs[index[future]][0]
            try:
                finished[index[future]] = future.result()
            except subprocess.CalledProcessError as error:  # one run's failure (e.g. memory) spoils no other run
                failures.append((run, failure_reason(run, error)))
                print(f"{run.name}, seed {run.seed} failed: {failures[-1][1]}", flush=True)
            outcomes = [finished[i] for i in sorted(finished)]  # after the last run: all of them
            if outcomes and len(outcomes) + len(failures) < len(runs):  # what finished, kept if time runs out
                partial = f"**Partial: {len(outcomes)} of {len(runs)} runs finished.**\n\n"
                with atomic_write(out) as tmp:
                    tmp.write_text(report(header + partial, outcomes, failures, columns, ""))
    if not outcomes:
        sys.exit("every run failed:\n" + failures_section(failures))
    references_text = references.result() if references is not None else ""
    references_pool.shutdown()
    text = report(header, outcomes, failures, columns, references_text)
    with atomic_write(out) as tmp:
        tmp.write_text(text)
    print(text)
    if args.pictures:
        first_seed = [o.run.run_dir for o in outcomes if o.run.seed == args.seeds[0]]
        for path in make_pictures(Path(args.data), args.pictures, first_seed, FRAMES):
            print(path)
    if failures:
        sys.exit(f"{len(failures)} of {len(runs)} runs failed; the table of the others: {out}")


if __name__ == "__main__":
    main()
