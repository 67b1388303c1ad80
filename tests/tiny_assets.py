"""The tests' tiny data: the committed dataset, the session's tiny run, a dataset's manifest and a run's CSV log.

``tests/assets/tiny`` is the tabletop benchmark at test scale, committed so that tests which only read a dataset
need no ``scenes`` extra; ``scripts/make_test_assets.py`` rebuilds it. Its ``dataset.yaml`` is the source of the
preset facts (labels, frame counts, resolution) that tests check.
"""

from __future__ import annotations

import csv
from pathlib import Path

import yaml

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
