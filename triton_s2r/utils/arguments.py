"""Argument types and the help formatter of the ``triton-s2r`` command line (``triton_s2r.cli``)."""

from __future__ import annotations

import argparse
import math


def resolution(text: str) -> tuple[int, int]:
    """Parse render-sim's --resolution (an argparse type): N (square) or HxW."""
    try:
        h, _, w = text.partition("x")
        size = (int(h), int(w or h))
    except ValueError:
        size = (0, 0)
    if min(size) < 1:
        raise argparse.ArgumentTypeError(f"expected N or HxW in pixels such as 256 or 240x320, got {text!r}")
    return size


def shard(text: str) -> tuple[int, int]:
    """Parse make-dataset's --shard (an argparse type): I/N with 0 <= I < N."""
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected I/N such as 0/4, got {text!r}") from None
    if not 0 <= i < n:
        raise argparse.ArgumentTypeError(f"shard I/N needs 0 <= I < N, got {text!r}")
    return i, n


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Help formatter that appends ``(default: X)`` only where that adds something.

    That is where the help does not already speak of the default and there is one to show (not None, False or a
    required argument).
    """

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if "default" in text or action.required or action.default in (None, False, argparse.SUPPRESS):
            return text
        return super()._get_help_string(action)


def fps(text: str) -> float:
    """Parse --fps (an argparse type): a positive, finite frame rate (0, negative or nan would leave an empty video)."""
    try:
        fps = float(text)
    except ValueError:
        fps = math.nan
    if not math.isfinite(fps) or fps <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive, finite frame rate such as 10 or 29.97, got {text!r}")
    return fps
