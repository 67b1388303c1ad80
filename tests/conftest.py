"""Shared fixtures and the GPU gate: tests marked ``gpu`` skip cleanly without CUDA + nvdiffrast.

Data: ``tests/assets/tiny`` is a committed tiny benchmark (``tests/tiny_assets.py``), so tests that only read a
dataset need no ``scenes`` extra. One one-epoch tiny run on it is trained per session and shared (read-only) by
the training, inference and evaluation tests. The slow tier's ``demo_out`` runs the whole
``triton-s2r demo --preset tiny`` instead (benchmark built from scratch, two epochs).
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

import pytest
import torch
from hydra import compose, initialize_config_module
from tiny_assets import TINY_DATASET, TINY_RUN, read_manifest

from triton_s2r.cli import main
from triton_s2r.train import build

os.environ.setdefault("WANDB_MODE", "disabled")  # tests never touch the network
# One CPU thread per process (subprocesses inherit it) unless the caller says otherwise: the tiny networks gain
# little from a second thread, and on a busy 2-core machine OpenMP's waiting threads made training runs 5 times and
# the downstream CNN 50 times slower.
os.environ.setdefault("OMP_NUM_THREADS", "1")
torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))  # torch is loaded already: tell it too
# Hydra's job logging turns on logging.captureWarnings the first time a run starts, and inside pytest.warns that
# sends a run's warnings to the log instead of the test; on from the start, Hydra's call changes nothing, so a test
# of a warning passes alone as in the whole tier.
logging.captureWarnings(True)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    from triton_s2r.render import nvdiffrast_available

    if nvdiffrast_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU and nvdiffrast (pip install 'triton_s2r[gpu]')")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def data_root(tmp_path_factory) -> Path:
    """A copy of the committed tiny dataset (tests may move its files about)."""
    root = tmp_path_factory.getbasetemp() / "data" / "tiny"
    shutil.copytree(TINY_DATASET, root)
    return root


@pytest.fixture(scope="session")
def manifest(data_root) -> dict:
    return read_manifest(data_root)


@pytest.fixture
def first_batch_terms(data_root):
    """A function of Hydra overrides: the tiny experiment's system with them, and its first batch's generator terms."""

    def terms(*overrides: str):
        with initialize_config_module("triton_s2r.conf", version_base="1.3"):
            cfg = compose("train", overrides=["experiment=tiny", f"data.root={data_root}", *overrides])
        datamodule, system = build(cfg)
        system.attach_data(datamodule, torch.device("cpu"))
        batch = datamodule.transfer_batch_to_device(next(iter(datamodule.train_dataloader())), torch.device("cpu"), 0)
        torch.manual_seed(0)
        return system, system._generator_terms(system._forward(system._inputs(batch)))

    return terms


@pytest.fixture(scope="session")
def run_dir(data_root, tmp_path_factory) -> Path:
    """The session's tiny run (``TINY_RUN``) on ``data_root``; tests copy it before changing anything."""
    run = tmp_path_factory.getbasetemp() / "runs" / "tiny"
    assert main(["train", *TINY_RUN, f"data.root={data_root}", f"hydra.run.dir={run}"]) == 0
    return run


# Slow tier: one whole tiny demo (benchmark built from scratch + 2 training epochs + a translated sequence) per
# session, shared by the demo and notebook tests.
@pytest.fixture(scope="session")
def demo_out(tmp_path_factory) -> Path:
    pytest.importorskip("mitsuba")  # the benchmark's real frames are path traced
    out = tmp_path_factory.getbasetemp() / "tiny_outputs"  # shared with test_notebooks.py
    assert main(["demo", "--preset", "tiny", "--experiment", "tiny", "--out", str(out), "--batch-size", "4"]) == 0
    return out
