"""Start-up of compiled training from empty compile caches: waiting for the compile, or compiling in the background.

Each variant runs ``triton-s2r train`` on DIR for ``--seconds`` of training (Lightning's ``max_time``) with empty
Inductor and Triton caches of its own, all variants at once on this machine (so they share its GPU and cores; the
table says how many batches each trained). From each run's ``train.log`` and ``status.yaml``: the batches trained,
when its first compiled batch ended (seconds from the start of training) and the main process's peak reserved GPU
memory. Writes the section "start-up" of docs/benchmarks.md.

    python -m benchmarks.startup --data DIR --seconds 300                 # waits, background, eager
    python -m benchmarks.startup --data DIR --variant NAME OVERRIDE ...  # rows of your own instead
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.report import machine, write_section
from triton_s2r.runs.run_dir import RunDir

COMPILED = ("system.compile=true", "system.compile_mode=reduce-overhead")
VARIANTS = {
    "waits": COMPILED,
    "background": (*COMPILED, "system.compile_in_background=true"),
    "eager": ("system.compile=false",),
}
FIRST_BATCH = re.compile(r"system\.compile: the first batch took (\d+) s")
HANDOVER = re.compile(r"the child compiled in (\d+) s; the run compiles from the cache at batch (\d+)")
FIRST_COMPILED = re.compile(r"the first compiled batch took (\d+) s")


def first_compiled_batch(log: str) -> tuple[str, str]:
    """(seconds from the start of training to the end of the first compiled batch, eager batches before it)."""
    if match := FIRST_BATCH.search(log):
        return match.group(1), "0"
    handover, compiled = HANDOVER.search(log), FIRST_COMPILED.search(log)
    if handover and compiled:
        return str(int(handover.group(1)) + int(compiled.group(1))), handover.group(2)
    return "-", "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True, help="benchmark dataset folder")
    parser.add_argument("--seconds", type=int, default=300, help="training time of every run")
    parser.add_argument("--variant", nargs="+", action="append", default=[], metavar=("NAME", "OVERRIDE"),
                        help="a row: its name and its overrides (default: " + ", ".join(VARIANTS) + ")")
    parser.add_argument("--runs", default=None, help="where the runs go (default: a temporary folder)")
    parser.add_argument("--no-write", action="store_true", help="print the table only")
    args = parser.parse_args()
    variants = {name: tuple(overrides) for name, *overrides in args.variant} or VARIANTS
    root = Path(args.runs or tempfile.mkdtemp(prefix="triton_s2r_startup_"))
    root.mkdir(parents=True, exist_ok=True)
    minutes, seconds = divmod(args.seconds, 60)
    processes = {}
    for name, overrides in variants.items():
        caches = root / name / "caches"
        env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(caches / "inductor"),
               "TRITON_CACHE_DIR": str(caches / "triton")}
        command = [sys.executable, "-m", "triton_s2r.cli", "train", f"data.root={args.data}", "logger=csv",
                   "trainer.enable_progress_bar=false", "trainer.max_epochs=100000",
                   f"++trainer.max_time=00:00:{minutes:02d}:{seconds:02d}", *overrides,
                   f"hydra.run.dir={root / name / 'run'}"]
        with (root / f"{name}.out").open("w") as out:
            processes[name] = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)
        print(f"started {name}: {' '.join(command)}", flush=True)
    rows = []
    for name, process in processes.items():
        if process.wait() != 0:
            for other in processes.values():
                other.terminate()
            raise SystemExit(f"{name} failed (exit code {process.returncode}): see {root / f'{name}.out'}")
        run = RunDir(root / name / "run")
        status = run.status()
        ended, eager_batches = first_compiled_batch(run.log_path.read_text())
        rows.append(f"| {name} | {' '.join(variants[name])} | {status['batches']} | {ended} | {eager_batches} | "
                    f"{status.get('peak_gpu_memory_gib', '-')} |")
    table = (f"Every run {args.seconds} s of training from empty Inductor and Triton caches, the {len(rows)} runs at "
             f"once on {machine()}; dataset {args.data}.\n\n"
             "| variant | overrides | batches | first compiled batch ended, s | eager batches before it | "
             "peak reserved GiB |\n|---|---|---|---|---|---|\n" + "\n".join(rows) + "\n")
    print(table)
    if not args.no_write:
        write_section(f"startup:{machine()}", f"Compiled start-up: {machine()}", table)


if __name__ == "__main__":
    main()
