"""The notebooks run top to bottom on the tiny config, and each .ipynb matches its jupytext .py script.

Default tier: each notebook's code (its .py script, which the sync test holds equal to the .ipynb) runs in this
process with TRITON_OUTPUTS holding a finished tiny dataset and run (the committed dataset, the session run).
Slow tier: each .ipynb executes in a Jupyter kernel with TRITON_OUTPUTS at the session's shared tiny outputs (also
used by the slow demo tests): the first notebook builds the tiny benchmark and the second trains the tiny run
unless they are there already.
"""

from __future__ import annotations

import runpy
import shutil
from pathlib import Path

import pytest
import torch

# The notebook tools come with the dev extra; elsewhere (the GPU machine's `-m gpu` run) the module skips.
jupytext = pytest.importorskip("jupytext")
nbformat = pytest.importorskip("nbformat")
NotebookClient = pytest.importorskip("nbclient").NotebookClient

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
def finished_outputs(data_root, run_dir, tmp_path_factory) -> Path:
    """An outputs folder whose tiny benchmark and tiny run are finished, so the notebooks only load them."""
    out = tmp_path_factory.mktemp("notebook_outputs")
    (out / "data").mkdir()
    (out / "data" / "tiny").symlink_to(data_root)
    shutil.copytree(run_dir, out / "runs" / "tiny")
    return out


@pytest.mark.parametrize("script", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_code_runs_on_a_finished_tiny_run(script: Path, finished_outputs: Path, manifest, monkeypatch,
                                                    capsys) -> None:
    monkeypatch.setenv("TRITON_TINY", "1")
    monkeypatch.setenv("TRITON_OUTPUTS", str(finished_outputs))
    monkeypatch.chdir(script.parent)
    namespace = runpy.run_path(str(script))  # raises if a cell fails
    printed = capsys.readouterr().out
    assert "[demo] building" not in printed and "[demo] training" not in printed  # finished ones are reused
    if script.stem == "01_scene_and_uvl":  # the stored UVL frame is the fresh render of its state
        assert list(namespace["dataset"].resolution) == manifest["resolution"]
        assert torch.equal(namespace["stored"].label, namespace["gbuffer"].label[:1])
    elif script.stem == "02_learned_textures":  # textures and meshes exported
        assert len(namespace["result"].textures) == len(manifest["labels"]["names"])
        assert namespace["result"].scene_glb.is_file()
    elif script.stem == "03_translate_sequence":  # the first sequence translated to a video
        assert namespace["result"].num_frames == manifest["splits"]["sequences/seq_000"]["frames"]
        assert namespace["result"].out.stat().st_size > 1000
    else:  # 04: the xArm trajectory rendered to one UVL frame per state
        result = namespace["result"]
        assert result.num_frames == namespace["states"].num_frames
        assert len(list((result.out / "uvl").glob("*.png"))) == result.num_frames


@pytest.fixture(scope="module")
def tiny_outputs(tmp_path_factory) -> Path:
    pytest.importorskip("mitsuba")  # building the benchmark path traces its real frames
    return tmp_path_factory.getbasetemp() / "tiny_outputs"  # shared with test_translate.py


@pytest.mark.slow
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
