"""The ``triton-s2r`` entry point, run for real."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from triton_s2r.cli import main
from triton_s2r.render import LabelTable, load_uvl_gbuffer, make_rasterizer
from triton_s2r.render.preview import render_to_files
from triton_s2r.render.primitives import builtin_frames, builtin_scene


def test_help_lists_subcommands() -> None:
    search = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    exe = shutil.which("triton-s2r", path=search) or pytest.fail("the triton-s2r console script is not installed")
    out = subprocess.run([exe, "--help"], capture_output=True, text=True, check=True).stdout
    commands = ("demo", "translate", "export-textures", "make-dataset", "eval", "downstream")
    assert all(command in out for command in commands)
    out = subprocess.run([sys.executable, "-m", "triton_s2r.cli", "demo", "--help"],
                         capture_output=True, text=True, check=True).stdout
    assert "--backend" in out and "--preset" in out and "--experiment" in out


@pytest.mark.parametrize("command", ["demo", "translate", "export-textures", "make-dataset", "eval", "downstream"])
def test_help_shows_each_default_once_and_readably(command: str, capsys) -> None:
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())  # argparse wraps lines
    assert "(default: None)" not in text and "(default: False)" not in text and "(default: (" not in text
    for option in text.split(" --")[1:]:
        assert option.count("default") <= 1, f"--{option}"


def test_render_to_files_writes_uvl_frames_and_resumes(tmp_path) -> None:
    # What the demo did before it became the main job (tests/test_translate.py covers the new demo).
    scene, state = builtin_frames(3, width=40, height=40)
    out = tmp_path / "frames"
    render_to_files(make_rasterizer("embree"), scene, state, out)
    files = sorted((out / "uvl").glob("*.png"))
    assert [f.name for f in files] == ["frame_000000.png", "frame_000001.png", "frame_000002.png"]
    assert len(list((out / "preview").glob("*.png"))) == 3
    labels: LabelTable = builtin_scene().labels
    g = load_uvl_gbuffer(files[0], labels)
    assert g.uv.shape == (1, 2, 40, 40) and g.mask.any() and (~g.mask).any()
    # A second run keeps finished frames untouched.
    mtime = files[0].stat().st_mtime_ns
    render_to_files(make_rasterizer("embree"), scene, state, out)
    assert files[0].stat().st_mtime_ns == mtime


def test_bad_backend_is_a_clear_error(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["demo", "--backend", "opengl"])
    assert "invalid choice: 'opengl'" in capsys.readouterr().err


def test_cli_backend_choices_match_the_render_backends() -> None:
    from triton_s2r.cli import BACKEND_CHOICES
    from triton_s2r.render import BACKENDS

    assert tuple(BACKEND_CHOICES) == BACKENDS
