"""``triton-s2r demo``: the main job, end to end, resumable.

Examples::

    triton-s2r demo                                        # small benchmark, experiment=demo, into outputs/
    triton-s2r demo --preset tiny --experiment tiny --out /tmp/demo   # the CI-sized version (about a minute)

Steps, each skipped when its result is already on disk (so rerunning an interrupted demo finishes it):

1. build the benchmark preset at ``OUT/data/<preset>`` (``triton-s2r make-dataset``);
2. train ``experiment=<experiment>`` into ``OUT/runs/<experiment>`` through the same entry point as
   ``triton-s2r train`` (a subprocess); a finished run is reused, one that stopped earlier continues from its
   last checkpoint;
3. translate the dataset's first test sequence to ``OUT/videos/<experiment>_<sequence>.mp4`` with the
   side-by-side panel (UVL | texture | translation | real);
4. evaluate the run on the dataset (``triton-s2r eval``) into ``OUT/eval/<experiment>.json``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from triton_s2r.inference.sequences import TranslateResult, translate
from triton_s2r.runs.run_dir import RunDir


@dataclass(frozen=True)
class DemoResult:
    """Where the main job left its outputs.

    Attributes:
        data_root: the benchmark dataset.
        run_dir: the training run.
        checkpoint: the checkpoint used for translation.
        trained: False when an existing finished run was reused.
        video: the side-by-side mp4 and what went into it.
        evaluation: the metrics JSON written by ``triton-s2r eval``'s library function.
        metrics: its content (``triton_s2r.evaluation.evaluate.evaluate``'s result).
        seconds: wall time of the whole job.
    """

    data_root: Path
    run_dir: Path
    checkpoint: Path
    trained: bool
    video: TranslateResult
    evaluation: Path
    metrics: dict
    seconds: float


def ensure_dataset(root: Path, preset: str, *, backend: str = "auto") -> Path:
    """Build the benchmark ``preset`` at ``root`` unless its ``dataset.yaml`` is there (make-dataset resumes)."""
    if not (root / "dataset.yaml").is_file() or not _complete(root):
        from triton_s2r.tabletop.dataset import make_dataset

        print(f"[demo] building the {preset!r} benchmark at {root}", flush=True)
        make_dataset(root, preset=preset, backend=backend)
    return root


def _complete(root: Path) -> bool:
    from triton_s2r.data.datasets import BenchmarkDataset, DatasetError

    try:
        BenchmarkDataset.open(root)
    except DatasetError:  # an interrupted build: make_dataset finishes it
        return False
    return True


def ensure_run(run_dir: Path, *, experiment: str, data_root: Path, overrides: tuple[str, ...] = ()) -> bool:
    """Train ``experiment`` on ``data_root`` into ``run_dir`` unless it has finished already.

    Runs ``python -m triton_s2r.train`` (the code path of ``triton-s2r train``) in a subprocess, so Hydra
    owns its process as usual; the same command run again continues an interrupted run from its last
    checkpoint, and refuses a run directory that holds a run with other settings.

    Returns:
        True if it trained, False if a finished run was reused.

    Raises:
        RuntimeError: training failed (its output above says why).
    """
    run = RunDir(run_dir)
    if run.config_path.is_file() and run.training_done(int(run.config().trainer.max_epochs)):
        print(f"[demo] reusing the finished run {run_dir}", flush=True)
        return False
    command = [sys.executable, "-m", "triton_s2r.train", f"experiment={experiment}", f"data.root={data_root}",
               f"hydra.run.dir={run_dir}", *overrides]
    print(f"[demo] training experiment={experiment} into {run_dir}", flush=True)
    status = subprocess.run(command, check=False).returncode
    if status != 0:
        raise RuntimeError(f"training exited with status {status} (command: {' '.join(command)}); its output is "
                           f"above; rerun `triton-s2r demo` with the same options to resume")
    return True


def prepare_run(out: str | os.PathLike, *, preset: str, experiment: str, backend: str = "auto",
                overrides: tuple[str, ...] = ()) -> tuple[Path, Path]:
    """Steps 1 and 2 of the demo (used by the notebooks too); returns ``(data_root, run_dir)``."""
    out = Path(out).resolve()
    data_root = ensure_dataset(out / "data" / preset, preset, backend=backend)
    run_dir = out / "runs" / experiment
    ensure_run(run_dir, experiment=experiment, data_root=data_root, overrides=overrides)
    return data_root, run_dir


def run_demo(
    out: str | os.PathLike = "outputs",
    *,
    preset: str = "small",
    experiment: str = "demo",
    backend: str = "auto",
    device: str = "auto",
    batch_size: int = 16,
    fps: float = 10.0,
    overrides: tuple[str, ...] = (),
) -> DemoResult:
    """The main job (see the module docstring).

    Args:
        out: output root: ``data/``, ``runs/`` and ``videos/`` go under it.
        preset: benchmark size (``tiny``, ``small``, ``full``).
        experiment: training recipe (``conf/experiment/<name>.yaml``).
        backend: render backend for building the dataset.
        device: where translation runs (training picks its own device from the experiment's trainer).
        batch_size: frames per translation call.
        fps: video frame rate.
        overrides: extra Hydra overrides for training.
    """
    start = time.perf_counter()
    out = Path(out).resolve()
    data_root = ensure_dataset(out / "data" / preset, preset, backend=backend)
    run_dir = out / "runs" / experiment
    trained = ensure_run(run_dir, experiment=experiment, data_root=data_root, overrides=overrides)
    checkpoint = RunDir(run_dir).last

    from triton_s2r.data.datasets import BenchmarkDataset
    from triton_s2r.inference.sequences import pick_split

    sequence = pick_split(BenchmarkDataset.open(data_root), None)
    video_path = out / "videos" / f"{experiment}_{Path(sequence).name}.mp4"
    print(f"[demo] translating {sequence} to {video_path}", flush=True)
    video = translate(run_dir, data_root, video_path, side_by_side=True, batch_size=batch_size, device=device,
                      checkpoint=str(checkpoint), sequence=sequence, fps=fps)

    from triton_s2r.evaluation.evaluate import evaluate, write_metrics

    print(f"[demo] evaluating {run_dir.name} on {data_root}", flush=True)
    metrics = evaluate(run_dir, data_root, checkpoint=str(checkpoint), device=device, batch_size=batch_size)
    evaluation = write_metrics(metrics, out / "eval" / f"{experiment}.json")
    return DemoResult(data_root, run_dir, checkpoint, trained, video, evaluation, metrics,
                      time.perf_counter() - start)
