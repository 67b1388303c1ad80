"""Atomic file writing: readers never see a half-written file, an interrupted job leaves none behind."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np


@contextmanager
def atomic_write(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path next to ``path`` (same suffix, so writers pick the right format).

    On normal exit the temporary file is renamed onto ``path`` (atomic on POSIX); on error it is deleted.
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=path.suffix)
    os.close(fd)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600 files; give the final file ordinary permissions
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_savez(path: str | os.PathLike, **arrays: np.ndarray | str) -> None:
    """``np.savez`` through ``atomic_write``."""
    with atomic_write(path) as tmp, open(tmp, "wb") as f:
        np.savez(f, **arrays)  # pyright: ignore[reportArgumentType]  # no array is named allow_pickle


def write_image(path: str | os.PathLike, rgb: np.ndarray) -> None:
    """Write an (H, W, 3) uint8 or uint16 RGB image atomically (format from the suffix, e.g. .png)."""
    import cv2

    with atomic_write(path) as tmp:
        if not cv2.imwrite(str(tmp), np.ascontiguousarray(rgb[..., ::-1])):  # OpenCV wants BGR
            raise OSError(f"OpenCV could not write {path}")
