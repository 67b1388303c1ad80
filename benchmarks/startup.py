"""Start-up of compiled training from empty compile caches: waiting for the compile, or compiling in the background.

Each variant runs ``triton-s2r train`` on DIR for ``--seconds`` of training (Lightning's ``max_time``) with empty
Inductor and Triton caches of its own, all variants at once on this machine (so they share its GPU and cores; the
table says how many batches each trained). From each run's ``train.log`` and ``status.yaml``: the batches trained,
when its first compiled batch ended (seconds from the start of training) and the main process's peak reserved GPU
memory. Writes the section "start-up" of docs/benchmarks.md. ``--through-file`` measures
``system.compile_cache_file`` instead: a compiled run writes the file, then a run with new empty caches starts from
it (a fresh machine given the file); section "start-up from a compile cache file".

    python -m benchmarks.startup --data DIR --seconds 300                 # waits, background, eager
    python -m benchmarks.startup --data DIR --variant NAME OVERRIDE ...  # rows of your own instead
    python -m benchmarks.startup --data DIR --through-file                # writes_file, then from_file
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Sequence
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


def start(root: Path, name: str, data: str, seconds: int, overrides: Sequence[str]) -> subprocess.Popen:
    """``triton-s2r train`` on ``data`` for ``seconds`` of training into root/NAME, with empty caches of its own."""
    caches = root / name / "caches"
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(caches / "inductor"),
           "TRITON_CACHE_DIR": str(caches / "triton")}
    minutes, rest = divmod(seconds, 60)
    command = [sys.executable, "-m", "triton_s2r.cli", "train", f"data.root={data}", "logger=csv",
               "trainer.enable_progress_bar=false", "trainer.max_epochs=100000",
               f"++trainer.max_time=00:00:{minutes:02d}:{rest:02d}", *overrides, f"hydra.run.dir={root / name / 'run'}"]
    print(f"started {name}: {' '.join(command)}", flush=True)
    with (root / f"{name}.out").open("w") as out:
        return subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)


def wait(root: Path, processes: dict[str, subprocess.Popen]) -> None:
    """Wait for every run; the first that fails stops the others and this benchmark."""
    for name, process in processes.items():
        if process.wait() != 0:
            for other in processes.values():
                other.terminate()
            raise SystemExit(f"{name} failed (exit code {process.returncode}): see {root / f'{name}.out'}")


def row(root: Path, name: str, overrides: Sequence[str]) -> str:
    """The table's row of the finished run root/NAME."""
    run = RunDir(root / name / "run")
    status = run.status()
    ended, eager_batches = first_compiled_batch(run.log_path.read_text())
    return (f"| {name} | {' '.join(overrides)} | {status['batches']} | {ended} | {eager_batches} | "
            f"{status.get('peak_gpu_memory_gib', '-')} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True, help="benchmark dataset folder")
    parser.add_argument("--seconds", type=int, default=300, help="training time of every run")
    parser.add_argument("--variant", nargs="+", action="append", default=[], metavar=("NAME", "OVERRIDE"),
                        help="a row: its name and its overrides (default: " + ", ".join(VARIANTS) + ")")
    parser.add_argument("--through-file", action="store_true",
                        help="instead: a compiled run writes a compile cache file, then a run with new empty caches "
                             "starts from it (system.compile_cache_file), one after the other")
    parser.add_argument("--runs", default=None, help="where the runs go (default: a temporary folder)")
    parser.add_argument("--no-write", action="store_true", help="print the table only")
    args = parser.parse_args()
    root = Path(args.runs or tempfile.mkdtemp(prefix="triton_s2r_startup_"))
    root.mkdir(parents=True, exist_ok=True)
    if args.through_file:
        overrides = (*COMPILED, f"system.compile_cache_file={root / 'compiled.bin'}")
        variants = {"writes_file": overrides, "from_file": overrides}
        for name in variants:  # the second needs the first's file
            wait(root, {name: start(root, name, args.data, args.seconds, overrides)})
        together = "one after the other"
    else:
        variants = {name: tuple(overrides) for name, *overrides in args.variant} or VARIANTS
        wait(root, {name: start(root, name, args.data, args.seconds, o) for name, o in variants.items()})
        together = "at once"
    rows = [row(root, name, overrides) for name, overrides in variants.items()]
    table = (f"Every run {args.seconds} s of training from empty Inductor and Triton caches, the {len(rows)} runs "
             f"{together} on {machine()}; dataset {args.data}.\n\n"
             "| variant | overrides | batches | first compiled batch ended, s | eager batches before it | "
             "peak reserved GiB |\n|---|---|---|---|---|---|\n" + "\n".join(rows) + "\n")
    print(table)
    if not args.no_write:
        key = "startup-file" if args.through_file else "startup"
        title = "Compiled start-up from a compile cache file" if args.through_file else "Compiled start-up"
        write_section(f"{key}:{machine()}", f"{title}: {machine()}", table)


if __name__ == "__main__":
    main()
