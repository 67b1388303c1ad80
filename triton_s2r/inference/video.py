"""Writing frame sequences: H.264 mp4 files or folders of PNG frames, incrementally and atomically.

Frames are handed over as they are produced (memory stays bounded by one batch, whatever the sequence
length) and land in a temporary file or folder next to the output, renamed into place only when the last
frame is written: an interrupted or failed run leaves no half-written output behind.

Examples::

    with frame_writer("outputs/videos/seq.mp4", fps=10) as write:
        for batch in batches:              # (B, H, W, 3) uint8
            write(batch)
"""

from __future__ import annotations

import math
import numbers
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from fractions import Fraction
from pathlib import Path

import cv2
import numpy as np

from triton_s2r.utils.files import atomic_write

VIDEO_SUFFIXES = (".mp4",)


def output_kind(out: str | os.PathLike) -> str:
    """``"mp4"`` for a ``.mp4`` path, ``"png"`` for a folder (no suffix, or an existing folder).

    Raises:
        ValueError: any other suffix, or a folder that exists and is not empty.
    """
    out = Path(out)
    if out.suffix.lower() in VIDEO_SUFFIXES:
        return "mp4"
    if out.is_dir() or not out.suffix:
        if out.is_dir() and any(out.iterdir()):
            raise ValueError(f"{out} exists and is not empty; choose a new folder for the PNG frames or delete it")
        return "png"
    raise ValueError(f"{out}: output must end in .mp4 (H.264 video) or name a folder for PNG frames")


def to_uint8(images: np.ndarray) -> np.ndarray:
    """(B, H, W, 3) float in [0, 1] -> uint8 (rounded, clipped)."""
    return np.round(np.clip(images, 0.0, 1.0) * 255.0).astype(np.uint8)


def check_fps(fps: float) -> float:
    """``fps`` as a float if it is a positive, finite frame rate; else a ValueError saying so.

    ffmpeg given 0, a negative or a NaN rate fails or writes an empty file; check before any work.
    """
    if isinstance(fps, bool) or not isinstance(fps, numbers.Real) or not math.isfinite(fps) or fps <= 0:
        raise ValueError(f"fps must be a positive, finite number of frames per second (e.g. 10), got {fps!r}")
    return float(fps)


class _Mp4Writer:
    """Streams RGB frames into ffmpeg's libx264 (the binary bundled with imageio-ffmpeg) and checks its exit status.

    ffmpeg runs as a subprocess reading raw frames from a pipe; its messages go to a temporary log, quoted
    in the error when it fails (a frame size libx264 refuses, a full disk, ...).
    """

    #: libx264 constant rate factor (0-51, lower is better): visually lossless for these frames.
    CRF = 10

    def __init__(self, path: Path, fps: float, *, name: Path) -> None:
        try:
            import imageio_ffmpeg
        except ImportError as exc:
            raise ImportError("writing mp4 needs imageio-ffmpeg, a dependency of triton_s2r: pip install "
                              "imageio-ffmpeg (or write PNG frames: pass a folder instead of a .mp4 path)") from exc
        self._exe, self.path, self.name, self.fps = imageio_ffmpeg.get_ffmpeg_exe(), path, name, check_fps(fps)
        self._process: subprocess.Popen | None = None
        self._log = None
        self.size: tuple[int, int] | None = None  # (H, W) of the first frame; all must match

    def _start(self, height: int, width: int) -> None:
        self.size = (height, width)
        # yuv420p (what players expect) needs even sides; pad rather than let ffmpeg rescale.
        self._padded = (height + height % 2, width + width % 2)
        rate = Fraction(self.fps).limit_denominator()  # a rational, so 24000/1001 is not rounded
        command = [
            self._exe, "-y", "-f", "rawvideo", "-vcodec", "rawvideo", "-s", f"{self._padded[1]}x{self._padded[0]}",
            "-pix_fmt", "rgb24", "-r", str(rate), "-i", "-", "-an", "-vcodec", "libx264", "-pix_fmt", "yuv420p",
            "-crf", str(self.CRF), "-movflags", "+faststart", "-v", "error", str(self.path),
        ]
        self._log = tempfile.TemporaryFile()
        self._process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=self._log)

    def write(self, frame: np.ndarray) -> None:
        height, width = frame.shape[:2]
        if self._process is None:
            self._start(height, width)
        assert self.size is not None and self._process is not None and self._process.stdin is not None  # by _start
        if (height, width) != self.size:
            raise ValueError(f"frame of {height}x{width} pixels in a video of {self.size[0]}x{self.size[1]}")
        if self._padded != self.size:
            frame = np.pad(frame, ((0, self._padded[0] - height), (0, self._padded[1] - width), (0, 0)))
        try:
            self._process.stdin.write(np.ascontiguousarray(frame).tobytes())
        except OSError:  # a broken pipe: ffmpeg has exited, and close() raises with its status and message
            self.close()
            raise

    def close(self) -> None:
        """Finish the file and wait for ffmpeg; raise OSError (quoting ffmpeg) if it failed."""
        process, self._process = self._process, None
        if process is None:
            return
        assert process.stdin is not None and self._log is not None  # both set with the process in _start
        try:
            try:
                process.stdin.close()  # end of input: ffmpeg flushes and writes the index
            except BrokenPipeError:
                pass  # ffmpeg exited early (the pipe is closed anyway); its exit status below tells why
            status = process.wait()
            if status != 0:
                self._log.seek(0)
                message = self._log.read().decode(errors="replace").strip()[-2000:] or "no message"
                raise OSError(f"{self.name}: ffmpeg failed writing the video (exit status {status}): {message}")
        finally:
            self._log.close()

    def abort(self) -> None:
        """Stop ffmpeg without waiting for a finished file (on an error or Ctrl-C elsewhere)."""
        process, self._process = self._process, None
        if process is not None:
            assert process.stdin is not None and self._log is not None  # both set with the process in _start
            process.kill()
            process.wait()
            for stream in (process.stdin, self._log):
                try:
                    stream.close()
                except OSError:
                    pass  # a broken pipe to a killed ffmpeg: nothing left to flush


class _PngWriter:
    def __init__(self, folder: Path) -> None:
        self.folder, self.count = folder, 0

    def write(self, frame: np.ndarray) -> None:
        path = self.folder / f"{self.count:06d}.png"
        if not cv2.imwrite(str(path), np.ascontiguousarray(frame[..., ::-1])):  # OpenCV wants BGR
            raise OSError(f"OpenCV could not write {path}")
        self.count += 1


@contextmanager
def frame_writer(out: str | os.PathLike, *, fps: float = 10.0) -> Iterator[Callable[[np.ndarray], None]]:
    """Open an mp4 file or a PNG folder for writing; yields ``write(frames)``.

    ``write`` takes (B, H, W, 3) uint8 RGB frames (or one (H, W, 3) frame), all of the same size. PNG frames
    are named ``000000.png``, ``000001.png``, ... On normal exit the output appears at ``out`` (an existing
    mp4 is replaced); on any exception, Ctrl-C included, the temporary output is deleted and ``out`` is left
    as it was.

    Args:
        out: ``*.mp4`` (H.264, yuv420p; odd sides are padded by one black row or column) or a folder.
        fps: frames per second of the video, positive and finite.

    Raises:
        ValueError: a bad ``out`` or ``fps`` (before anything is written), frames of the wrong type or size,
            or no frames at all.
        OSError: ffmpeg failed (its message is quoted) or a PNG frame could not be written.
    """
    out = Path(out)
    kind = output_kind(out)
    check_fps(fps)  # also for PNG frames: a bad rate is a bad call, whatever the output
    out.parent.mkdir(parents=True, exist_ok=True)

    def writer_of(single: Callable[[np.ndarray], None]) -> Callable[[np.ndarray], None]:
        def write(frames: np.ndarray) -> None:
            frames = np.asarray(frames)
            if frames.dtype != np.uint8 or frames.shape[-1] != 3 or frames.ndim not in (3, 4):
                raise ValueError(f"frames must be (B, H, W, 3) or (H, W, 3) uint8, got {frames.dtype} "
                                 f"{frames.shape}")
            for frame in frames if frames.ndim == 4 else frames[None]:
                single(frame)

        return write

    if kind == "mp4":
        with atomic_write(out) as tmp:
            mp4 = _Mp4Writer(tmp, fps, name=out)
            try:
                yield writer_of(mp4.write)
                if mp4.size is None:
                    raise ValueError(f"{out}: no frames were written; an empty video is not created")
            except BaseException:
                mp4.abort()  # ffmpeg must exit before the temporary file is deleted
                raise
            mp4.close()  # raises if ffmpeg failed: the temporary file is then deleted, out left as it was
        return
    tmp_dir = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}."))
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp_dir, 0o777 & ~umask)  # mkdtemp makes 0700 folders; the result is an ordinary folder
    try:
        png = _PngWriter(tmp_dir)
        yield writer_of(png.write)
        os.replace(tmp_dir, out)  # atomic; also replaces an existing empty folder
    except BaseException:
        shutil.rmtree(tmp_dir, ignore_errors=True)
        raise


def side_by_side(*panels: np.ndarray) -> np.ndarray:
    """Concatenate image batches left to right.

    Args:
        panels: each (B, H, W_i, 3) uint8, same B and H.

    Returns:
        (B, H, sum W_i, 3) uint8.
    """
    heights = {p.shape[:2] for p in panels}
    if len(heights) != 1:
        raise ValueError(f"panels must share batch size and height, got shapes {[p.shape for p in panels]}")
    return np.concatenate(panels, axis=2)
