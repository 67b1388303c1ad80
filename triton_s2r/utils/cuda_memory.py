"""How PyTorch's CUDA allocator reserves memory for training (docs/training.md, "Speed options")."""

from __future__ import annotations

import os

ALLOCATOR_ENV = "PYTORCH_CUDA_ALLOC_CONF"
#: Segments that grow in place instead of new blocks of fixed sizes: the compiled step reserves about 0.5-1 GiB
#: less at the same speed (docs/benchmarks.md).
ALLOCATOR_SETTINGS = "expandable_segments:True"


def prefer_expandable_segments() -> None:
    """Set ``PYTORCH_CUDA_ALLOC_CONF`` to expandable segments unless the user set it.

    PyTorch reads the variable at the process's first CUDA allocation, so call this before any: after it the
    variable changes nothing. Processes started from this one (DDP's ranks, data workers) inherit it.
    """
    os.environ.setdefault(ALLOCATOR_ENV, ALLOCATOR_SETTINGS)
