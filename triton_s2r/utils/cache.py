"""The cache folder for derived files (xatlas unwraps, the robot's baked links), never next to user files."""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "TRITON_S2R_CACHE"


def cache_dir() -> Path:
    """``$TRITON_S2R_CACHE``, else ``$XDG_CACHE_HOME/triton_s2r``, else ``~/.cache/triton_s2r`` (may not exist yet).

    Entries are keyed by the content they derive from, so one folder serves every project and checkout, and
    deleting it only costs recomputation.
    """
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base).expanduser() / "triton_s2r"
