"""Shared fixtures and the GPU gate: tests marked ``gpu`` skip cleanly without CUDA + nvdiffrast."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("WANDB_MODE", "disabled")  # tests never touch the network


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    from triton_s2r.render import nvdiffrast_available

    if nvdiffrast_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU and nvdiffrast (pip install 'triton_s2r[gpu]')")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
