"""Compile in a child process while the run trains eagerly (``system.compile_in_background``).

A compiled run's first batch waits for ``torch.compile``: minutes from a cold Inductor cache, about 20 s from a warm
one (docs/training.md, "Speed options"). With ``system.compile_in_background=true`` the run instead starts training
at once with its compiled pieces run eagerly (``torch.compiler.set_stance("force_eager")``), while a child process
trains two batches of the same config compiled, which fills Inductor's on-disk cache. When the child has finished,
the run compiles its pieces from that cache at its next batch and goes on compiled.

The child is ``python -m triton_s2r.compile_cache CONFIG`` (``CHILD_MODULE``).
"""

from __future__ import annotations

import logging
import subprocess
import sys
import time
from pathlib import Path

import pytorch_lightning as pl
import torch

from triton_s2r.runs.run_dir import RunDir
from triton_s2r.training.step import SteppedSystem

log = logging.getLogger(__name__)

#: The child's module: it trains the run's config for two batches compiled (named here, not imported: it imports
#: the trainer, which imports the system, which imports this module).
CHILD_MODULE = "triton_s2r.compile_cache"
#: The child's output, in the run directory.
CHILD_LOG = "compile_in_background.log"


class BackgroundCompile(pl.Callback):
    """Trains eagerly while a child process compiles the run's pieces into Inductor's cache; then compiled.

    Single-process runs only: under DDP every rank compiles at its first batch, as without the option. The child
    reads the run's ``config.yaml`` and writes its output to ``RUN/compile_in_background.log``; if it fails, the
    run compiles by itself at its next batch (a warning names the log). A run that ends first waits for it.
    """

    def __init__(self) -> None:
        self._child: subprocess.Popen | None = None
        self._log_path: Path | None = None
        self._started = 0.0
        self._compiled_batch_start: float | None = None

    def command(self, config: Path) -> list[str]:
        """The child's command line."""
        return [sys.executable, "-m", CHILD_MODULE, str(config)]

    def on_fit_start(self, trainer: pl.Trainer, pl_module: SteppedSystem) -> None:
        """Lightning hook: start the child and run the compiled pieces eagerly until it ends."""
        run = RunDir(Path(trainer.default_root_dir))
        config = run.config_path
        if trainer.world_size > 1 or not config.is_file():
            why = "under DDP" if trainer.world_size > 1 else f"without {config}"
            log.info("system.compile_in_background: not %s; the first batch compiles", why)
            return
        self._log_path = run.path / CHILD_LOG
        with self._log_path.open("w") as out:
            self._child = subprocess.Popen(self.command(config), stdout=out, stderr=subprocess.STDOUT,
                                           stdin=subprocess.DEVNULL, start_new_session=True)
        self._started = time.perf_counter()
        torch.compiler.set_stance("force_eager")
        log.info("system.compile_in_background: training eagerly while a child process compiles (%s)", self._log_path)

    def on_train_batch_start(self, trainer: pl.Trainer, pl_module: SteppedSystem, batch, batch_idx: int) -> None:
        """Lightning hook: once the child has ended, compile (from its cache) at this batch."""
        if self._child is None or self._child.poll() is None:
            return
        code, self._child = self._child.returncode, None
        torch.compiler.set_stance("default")
        if code == 0:
            log.info("system.compile_in_background: the child compiled in %.0f s; the run compiles from the cache "
                     "at batch %d", time.perf_counter() - self._started, pl_module.batches_trained)
            self._compiled_batch_start = time.perf_counter()
        else:
            log.warning("system.compile_in_background: the child failed (exit code %s, see %s); the run compiles "
                        "by itself at batch %d", code, self._log_path, pl_module.batches_trained)

    def on_train_batch_end(self, trainer: pl.Trainer, pl_module: SteppedSystem, outputs, batch, batch_idx: int) -> None:
        """Lightning hook: after the first compiled batch, say how long it took."""
        if self._compiled_batch_start is not None:
            log.info("system.compile_in_background: the first compiled batch took %.0f s",
                     time.perf_counter() - self._compiled_batch_start)
            self._compiled_batch_start = None

    def teardown(self, trainer: pl.Trainer, pl_module: SteppedSystem, stage: str) -> None:
        """Lightning hook: wait for a child that is still compiling and leave the stance as it was."""
        if self._child is not None:
            # Waited for, not stopped: a compiler killed mid-write leaves a truncated module in the cache, which
            # the next compiled run would fail to load. The child ends after its two batches; in a session of
            # its own, a Ctrl-C at the terminal does not reach it either.
            log.info("system.compile_in_background: the run ended before the child finished compiling; waiting "
                     "for it, so that the cache it fills is whole")
            code = self._child.wait()
            self._child = None
            log.info("system.compile_in_background: the child finished (exit code %d)", code)
        torch.compiler.set_stance("default")
