"""benchmarks.pictures: the docs' comparison pictures from real run directories."""

from __future__ import annotations

import cv2
import pytest

from benchmarks.pictures import make_pictures


def test_pictures_show_each_run_and_its_textures(run_dir, data_root, manifest, tmp_path) -> None:
    written = make_pictures(data_root, tmp_path / "docs" / "cmp", [run_dir, run_dir], frames=[0, 1], device="cpu",
                            texture_side=16)
    assert [p.name for p in written] == ["cmp_frames.jpg", "cmp_textures.jpg"]
    frames, textures = (cv2.imread(str(p)) for p in written)
    height, width = manifest["resolution"]
    assert frames.shape == (2 * height, 4 * width, 3)  # two test frames; UVL, real and two runs
    assert textures.shape == (2 * 16, len(manifest["labels"]["names"]) * 16, 3)  # a tile per label, void has none


def test_a_frame_outside_the_test_split_is_refused(run_dir, data_root, tmp_path) -> None:
    with pytest.raises(ValueError, match="--frames"):
        make_pictures(data_root, tmp_path / "cmp", [run_dir], frames=[999], device="cpu")
