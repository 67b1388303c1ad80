"""Shared fixtures and the GPU gate: tests marked ``gpu`` skip cleanly without CUDA + nvdiffrast."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from triton_s2r.cli import main

os.environ.setdefault("WANDB_MODE", "disabled")  # tests never touch the network


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    from triton_s2r.render import nvdiffrast_available

    if nvdiffrast_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU and nvdiffrast (pip install 'triton_s2r[gpu]')")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


# One tiny demo (benchmark + 2 training epochs + a translated sequence) per session, shared by the inference,
# evaluation and notebook tests.
@pytest.fixture(scope="session")
def demo_out(tmp_path_factory) -> Path:
    pytest.importorskip("mitsuba")  # the benchmark's real frames are path traced
    out = tmp_path_factory.getbasetemp() / "tiny_outputs"  # shared with test_notebooks.py
    assert main(["demo", "--preset", "tiny", "--experiment", "tiny", "--out", str(out), "--batch-size", "4"]) == 0
    return out


@pytest.fixture(scope="session")
def run_dir(demo_out) -> Path:
    return demo_out / "runs" / "tiny"


@pytest.fixture(scope="session")
def data_root(demo_out) -> Path:
    return demo_out / "data" / "tiny"
