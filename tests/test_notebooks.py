"""The notebooks run top to bottom on the tiny config, and each .ipynb matches its jupytext .py script.

Execution points TRITON_OUTPUTS at the session's shared tiny outputs (also used by test_translate.py): the
first notebook builds the tiny benchmark and the second trains the tiny run unless they are there already.
About 45 s on 2 cores from scratch, 20 s when they exist.
"""

from __future__ import annotations

from pathlib import Path

import jupytext
import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.py"))


def test_there_are_four_paired_notebooks() -> None:
    assert [p.stem for p in NOTEBOOKS] == ["01_scene_and_uvl", "02_learned_textures", "03_translate_sequence",
                                          "04_bring_your_own_robot"]


@pytest.mark.parametrize("script", NOTEBOOKS, ids=lambda p: p.stem)
def test_ipynb_is_in_sync_with_its_script(script: Path) -> None:
    paired = script.with_suffix(".ipynb")
    assert paired.is_file(), f"{paired} missing: run `jupytext --to ipynb {script.name}` in notebooks/"
    cells = [(c.cell_type, c.source) for c in jupytext.read(script).cells]
    stored = nbformat.read(paired, as_version=4)
    assert cells == [(c.cell_type, c.source) for c in stored.cells], (
        f"{paired.name} differs from {script.name}: edit the .py, then `jupytext --sync {script.name}`")
    assert all(not c.get("outputs") for c in stored.cells if c.cell_type == "code"), "strip outputs before committing"


@pytest.fixture(scope="module")
def tiny_outputs(tmp_path_factory) -> Path:
    pytest.importorskip("mitsuba")  # building the benchmark path traces its real frames
    return tmp_path_factory.getbasetemp() / "tiny_outputs"  # shared with test_translate.py


@pytest.mark.parametrize("script", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_on_tiny(script: Path, tiny_outputs: Path, monkeypatch) -> None:
    monkeypatch.setenv("TRITON_TINY", "1")
    monkeypatch.setenv("TRITON_OUTPUTS", str(tiny_outputs))  # the kernel inherits the environment
    notebook = nbformat.read(script.with_suffix(".ipynb"), as_version=4)
    NotebookClient(notebook, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(script.parent)}}).execute()  # raises on a failing cell
    outputs = [o for c in notebook.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert any("image/png" in o.get("data", {}) or "text/html" in o.get("data", {}) for o in outputs), (
        f"{script.name} displayed no picture or video")
