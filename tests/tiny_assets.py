"""The tests' tiny data: the committed dataset, the session's tiny run, manifests, CSV logs, compile cache runs.

``tests/assets/tiny`` is the tabletop benchmark at test scale, committed so that tests which only read a dataset
need no ``scenes`` extra; ``scripts/make_test_assets.py`` rebuilds it. Its ``dataset.yaml`` is the source of the
preset facts (labels, frame counts, resolution) that tests check.
"""

from __future__ import annotations

import csv
from pathlib import Path

import torch
import yaml

from triton_s2r.cli import main

TINY_DATASET = Path(__file__).resolve().parent / "assets" / "tiny"
#: The session run (conftest's ``run_dir``): experiment=tiny for one epoch. The resolution schedule steps up within
#: that epoch so that the switch shows; a larger texture tile only speeds up baking the texture (9 x 1024^2 texels
#: per Translator, in chunks of tile_size; the result is the same).
TINY_RUN = ["experiment=tiny", "logger=csv", "trainer.enable_progress_bar=false", "trainer.max_epochs=1",
            "system.resolution_schedule=[[0,48],[3,56]]", "model.translator.texture.tile_size=16384"]


def read_manifest(root: Path) -> dict:
    """A dataset's ``dataset.yaml``."""
    return yaml.safe_load((root / "dataset.yaml").read_text())


def metric_rows(run_dir: Path) -> list[dict[str, str]]:
    """The rows of a run's CSV log (``logger=csv``): every column of the header, '' where a row logged nothing."""
    with (run_dir / "csv" / "version_0" / "metrics.csv").open(newline="") as f:
        return list(csv.DictReader(f))


def train_twice_through_a_compile_cache_file(args: list[str], tmp_path: Path, monkeypatch) -> tuple[str, str]:
    """``triton-s2r ARGS`` (compiled, with ``system.compile_cache_file``) into tmp_path/a, then into tmp_path/b.

    Each run starts from a reset TorchDynamo, as a fresh process does, so that nothing earlier tests in this process
    compiled can make the first run's graphs differ from the second's. The second run has an empty Inductor cache:
    checks that it took every graph from the file. Returns both logs.
    """
    torch._dynamo.reset()
    assert main([*args, f"hydra.run.dir={tmp_path / 'a'}"]) == 0
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "empty_inductor_cache"))
    torch._dynamo.reset()
    counters = torch._dynamo.utils.counters["inductor"]
    misses, hits = counters["fxgraph_cache_miss"], counters["fxgraph_cache_hit"]
    assert main([*args, f"hydra.run.dir={tmp_path / 'b'}"]) == 0
    assert counters["fxgraph_cache_hit"] > hits
    assert counters["fxgraph_cache_miss"] == misses  # every graph came from the file
    assert metric_rows(tmp_path / "b")
    return (tmp_path / "a" / "train.log").read_text(), (tmp_path / "b" / "train.log").read_text()
