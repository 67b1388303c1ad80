"""A compile cache in one file, to carry to other machines (``system.compile_cache_file``).

``torch.compile`` keeps what it builds in Inductor's on-disk cache, which only that machine sees: a fresh machine (a
cluster node, a cloud instance, a container) compiles every network again, minutes before the first batch. PyTorch
can serialise what a process compiled or took from its caches into one blob
(``torch.compiler.save_cache_artifacts``) and load such a blob into another process's caches
(``torch.compiler.load_cache_artifacts``). With ``system.compile_cache_file=FILE`` a compiled run loads FILE before
its first batch, when it exists, and when training ends writes there the pieces it compiled or took from a cache,
if it had to compile any: the file holds one recipe's pieces, those of the last run that compiled (PyTorch records
the pieces a process uses, not those it loaded and never called, so runs of other recipes would replace each
other's: give each its own file). The entries' keys hold the torch version and the device, so a file from another
torch or another kind of GPU costs nothing but misses: the run compiles as without it.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytorch_lightning as pl
import torch

from triton_s2r.training.step import SteppedSystem
from triton_s2r.utils.files import atomic_write

log = logging.getLogger(__name__)


def _keys(info) -> set[str]:
    """The entry keys of a ``torch.compiler`` ``CacheInfo`` (None: none)."""
    return set() if info is None else {key for keys in info.artifacts.values() for key in keys}


def load_compile_artifacts(path: Path) -> set[str]:
    """Load the compiled pieces in ``path`` into this process's compile caches.

    Args:
        path: a file written by ``save_compile_artifacts``; absent: nothing loaded.

    Returns:
        The keys of the entries loaded; empty when the file is absent, or unreadable (a warning names it: the
        process then compiles what it needs, and the file is rewritten when it saves).
    """
    if not path.is_file():
        return set()
    try:
        info = torch.compiler.load_cache_artifacts(path.read_bytes())  # None: torch could not read it
        problem = "" if info is not None else "not a file of compiled pieces, or a damaged one"
    except Exception as exc:  # a cache: any failure to read it only means compiling anew
        info, problem = None, f"{type(exc).__name__}: {exc}"
    if problem:
        log.warning("system.compile_cache_file: %s could not be loaded (%s); compiling anew, and the file is "
                    "rewritten when training ends", path, problem)
    return _keys(info)


def save_compile_artifacts(path: Path, loaded: set[str]) -> int:
    """Write every piece this process compiled or took from a cache into ``path``, if it compiled any.

    Args:
        path: the file (its folder is created); replaced atomically.
        loaded: the keys ``load_compile_artifacts`` loaded from it.

    Returns:
        The number of entries written; 0 when every piece this process used came from ``loaded`` (the file is then
        left as it is).
    """
    saved = torch.compiler.save_cache_artifacts()
    if saved is None or _keys(saved[1]) <= loaded:
        return 0
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(path) as tmp:
        tmp.write_bytes(saved[0])
    return len(_keys(saved[1]))


class CompileArtifacts(pl.Callback):
    """Loads ``path`` into the compile caches before training; the first rank writes it when training ends.

    Args:
        path: ``system.compile_cache_file``.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._loaded: set[str] = set()

    def setup(self, trainer: pl.Trainer, pl_module: SteppedSystem, stage: str) -> None:
        """Lightning hook: before the first compiled call, load the file (every rank compiles)."""
        self._loaded = load_compile_artifacts(self.path)
        if trainer.is_global_zero:
            if self._loaded:
                log.info("system.compile_cache_file: loaded %d compiled pieces from %s", len(self._loaded), self.path)
            elif not self.path.is_file():
                log.info("system.compile_cache_file: %s does not exist yet; it is written when training ends",
                         self.path)

    def on_train_end(self, trainer: pl.Trainer, pl_module: SteppedSystem) -> None:
        """Lightning hook: write what this run compiled (the first rank only; ranks compile the same)."""
        if not trainer.is_global_zero:
            return
        try:
            written = save_compile_artifacts(self.path, self._loaded)
        except Exception as exc:  # a cache: a run's results never depend on writing it
            log.warning("system.compile_cache_file: could not write %s (%s: %s); the run's results are unaffected",
                        self.path, type(exc).__name__, exc)
            return
        if written:
            log.info("system.compile_cache_file: wrote %d compiled pieces to %s (%.1f MiB)", written, self.path,
                     self.path.stat().st_size / 2**20)
