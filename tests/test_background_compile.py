"""system.compile_in_background: eager training while a child process fills the compile cache."""

from __future__ import annotations

import logging
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
import yaml
from tiny_assets import metric_rows

from benchmarks.startup import HANDOVER
from triton_s2r.cli import main
from triton_s2r.training.background_compile import CHILD_LOG, CHILD_MODULE, BackgroundCompile

TINY = ["experiment=tiny", "trainer.enable_progress_bar=false", "data.val_frames=0", "system.compile=true"]
LOGGER = "triton_s2r.training.background_compile"


class CountingBackend:
    """A ``torch.compile`` backend that records each graph it is handed and runs it as it is."""

    def __init__(self) -> None:
        self.graphs = 0

    def __call__(self, graph_module, example_inputs):
        self.graphs += 1
        return graph_module.forward


def started_callback(tmp_path: Path, child: str, monkeypatch,
                     world_size: int = 1) -> tuple[BackgroundCompile, SimpleNamespace]:
    """A ``BackgroundCompile`` started on a stand-in trainer whose child runs the Python code ``child``."""
    (tmp_path / "config.yaml").write_text("seed: 0\n")
    callback = BackgroundCompile()
    monkeypatch.setattr(callback, "command", lambda config: [sys.executable, "-c", child])
    trainer = SimpleNamespace(world_size=world_size, default_root_dir=str(tmp_path))
    callback.on_fit_start(trainer, SimpleNamespace())  # pyright: ignore[reportArgumentType]  # a stand-in
    return callback, trainer


def batches_until(callback: BackgroundCompile, trainer, caplog, text: str) -> None:
    """Call the batch-start hook (at batch 7) until a log message holds ``text``."""
    module = SimpleNamespace(batches_trained=7)
    for _ in range(300):
        callback.on_train_batch_start(trainer, module, None, 0)  # pyright: ignore[reportArgumentType]  # stand-ins
        if any(text in r.getMessage() for r in caplog.records):
            return
        time.sleep(0.05)
    raise AssertionError(f"no message with {text!r}: {[r.getMessage() for r in caplog.records]}")


def processes_running(text: bytes) -> list[Path]:
    """The ``/proc/PID/cmdline`` files that hold ``text``."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if text in cmdline.read_bytes():
                found.append(cmdline)
        except OSError:  # the process ended meanwhile
            pass
    return found


def test_compiled_code_runs_eagerly_until_the_child_succeeds_then_compiles(tmp_path, monkeypatch, caplog) -> None:
    backend = CountingBackend()
    step = torch.compile(lambda x: x * 2 + 1, backend=backend)
    with caplog.at_level(logging.INFO, logger=LOGGER):
        callback, trainer = started_callback(tmp_path, "import time; time.sleep(0.5)", monkeypatch)
        try:
            assert step(torch.ones(2)).tolist() == [3.0, 3.0]
            assert backend.graphs == 0  # the child is still compiling: eager
            batches_until(callback, trainer, caplog, "compiles from the cache at batch 7")
            handover = next(r.getMessage() for r in caplog.records if "compiles from the cache" in r.getMessage())
            assert HANDOVER.search(handover)  # the line benchmarks.startup reads
            assert step(torch.ones(3)).tolist() == [3.0, 3.0, 3.0]
            assert backend.graphs == 1
        finally:
            callback.teardown(trainer, SimpleNamespace(), "fit")  # pyright: ignore[reportArgumentType]
    assert (tmp_path / CHILD_LOG).is_file()


def test_a_failed_child_is_named_and_the_run_compiles_by_itself(tmp_path, monkeypatch, caplog) -> None:
    backend = CountingBackend()
    step = torch.compile(lambda x: x - 1, backend=backend)
    with caplog.at_level(logging.INFO, logger=LOGGER):
        callback, trainer = started_callback(tmp_path, "print('no data here'); raise SystemExit(3)", monkeypatch)
        try:
            batches_until(callback, trainer, caplog, "the child failed")
        finally:
            callback.teardown(trainer, SimpleNamespace(), "fit")  # pyright: ignore[reportArgumentType]
    warning = next(r for r in caplog.records if "the child failed" in r.getMessage())
    assert warning.levelno == logging.WARNING
    assert "exit code 3" in warning.getMessage() and str(tmp_path / CHILD_LOG) in warning.getMessage()
    assert "no data here" in (tmp_path / CHILD_LOG).read_text()
    step(torch.ones(1))
    assert backend.graphs == 1


def test_under_ddp_no_child_starts(tmp_path, monkeypatch, caplog) -> None:
    with caplog.at_level(logging.INFO, logger=LOGGER):
        callback, trainer = started_callback(tmp_path, "raise SystemExit(1)", monkeypatch, world_size=2)
    assert not (tmp_path / CHILD_LOG).exists()
    assert any("not under DDP" in r.getMessage() for r in caplog.records)
    callback.teardown(trainer, SimpleNamespace(), "fit")  # pyright: ignore[reportArgumentType]


@pytest.mark.slow
def test_the_child_fills_the_cache_that_the_run_then_compiles_from(data_root, tmp_path, monkeypatch) -> None:
    """The child's config is the run's ``config.yaml``; a process compiling it afterwards finds every graph cached."""
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    run = tmp_path / "run"
    assert main(["train", *TINY, f"data.root={data_root}", "trainer.max_epochs=1", "data.steps_per_epoch=2",
                 "loss.surface_losses_from=1", "system.resolution_schedule=[[0,48]]", f"hydra.run.dir={run}",
                 "system.compile=false"]) == 0
    config = yaml.safe_load((run / "config.yaml").read_text())
    config["system"]["compile"] = True
    (run / "config.yaml").write_text(yaml.safe_dump(config))
    child = subprocess.run(BackgroundCompile().command(run / "config.yaml"), capture_output=True, text=True)
    assert child.returncode == 0, child.stdout[-2000:] + child.stderr[-2000:]
    cached = list((tmp_path / "inductor").rglob("fxgraph"))
    assert cached, "the child left no compiled graphs in the cache"
    torch._dynamo.reset()
    counters = torch._dynamo.utils.counters["inductor"]
    misses = counters["fxgraph_cache_miss"]
    run2 = tmp_path / "run2"
    assert main(["train", *TINY, f"data.root={data_root}", "trainer.max_epochs=1", "data.steps_per_epoch=2",
                 "loss.surface_losses_from=1", "system.resolution_schedule=[[0,48]]",
                 f"hydra.run.dir={run2}"]) == 0
    assert counters["fxgraph_cache_hit"] > 0
    assert counters["fxgraph_cache_miss"] == misses  # every graph came from the child's cache


@pytest.mark.slow
def test_a_run_that_ends_first_trains_eagerly_and_waits_for_its_child(data_root, tmp_path, monkeypatch) -> None:
    """The run ends while the child compiles (minutes on a CPU, from an empty cache): it waits, compiling nothing."""
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    run = tmp_path / "run"
    graphs_before = torch._dynamo.utils.counters["stats"]["unique_graphs"]
    assert main(["train", *TINY, f"data.root={data_root}", "system.compile_in_background=true",
                 "trainer.max_epochs=100000", "++trainer.max_time=00:00:00:30", f"hydra.run.dir={run}"]) == 0
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == graphs_before  # nothing compiled here
    assert len(metric_rows(run)) >= 3
    log = (run / "train.log").read_text()
    assert "training eagerly while a child process compiles" in log
    assert "the run ended before the child finished compiling; waiting for it" in log
    assert "the child finished (exit code 0)" in log
    assert processes_running(CHILD_MODULE.encode()) == []
