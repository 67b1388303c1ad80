"""`triton-s2r eval` end to end on the tiny demo run, and its errors."""

from __future__ import annotations

import json
import math

import pytest

from triton_s2r.cli import main
from triton_s2r.evaluate import evaluate


def test_eval_writes_every_metric(run_dir, data_root, tmp_path, capsys) -> None:
    out = tmp_path / "metrics" / "tiny.json"
    assert main(["eval", str(run_dir), str(data_root), "--out", str(out), "--device", "cpu"]) == 0
    result = json.loads(out.read_text())
    for key in ("psnr", "ssim", "psnr_masked", "ssim_masked", "surface_consistency", "surface_consistency_real",
                "warp_error", "warp_error_real"):
        assert isinstance(result[key], float) and math.isfinite(result[key]), key
    assert 0 < result["psnr"] <= 100 and -1 <= result["ssim"] <= 1
    # Every label of the tiny scene and the void around it are on screen in some test frame.
    by_label = result["psnr_by_label"]
    assert list(by_label)[:2] == ["void", "table"] and len(by_label) == 10
    assert all(isinstance(v, float) and 0 < v <= 100 for v in by_label.values()), by_label
    # Flicker per label: every label but the void, each a colour difference; the whole-frame number is a
    # pixel-weighted mean of them, so it lies within their range.
    for key in ("warp_error_by_label", "warp_error_by_label_real"):
        warp = result[key]
        assert list(warp) == list(by_label)[1:], key
        seen = [v for v in warp.values() if v is not None]
        assert seen and all(0 <= v <= 1 for v in seen), warp
        assert min(seen) - 1e-6 <= result[key.replace("_by_label", "")] <= max(seen) + 1e-6, key
    assert result["n_frames"] == 8 and result["n_sequences"] == 1 and result["n_sequence_frames"] == 8
    assert result["fid"] is None and "weights" in result["absent"]["lpips"]
    assert result["dataset"] == str(data_root.resolve()) and result["checkpoint"] == "last"
    assert "psnr=" in capsys.readouterr().out
    # Reality's own flicker is positive (lights and noise change per frame) and measured on the same pixels.
    assert result["surface_consistency_real"] > 0 and result["warp_error_real"] > 0


def test_demo_wrote_its_evaluation(demo_out) -> None:
    result = json.loads((demo_out / "eval" / "tiny.json").read_text())
    assert math.isfinite(result["psnr"]) and result["checkpoint"].endswith("epoch0001.ckpt")


def test_eval_refuses_unpaired_split(run_dir, data_root, tmp_path) -> None:
    with pytest.raises(ValueError, match="'train_sim' is not a paired split"):
        evaluate(run_dir, data_root, split="train_sim", device="cpu", progress=False)


def test_eval_missing_inputs_are_clear_errors(run_dir, tmp_path, capsys) -> None:
    assert main(["eval", str(run_dir), str(tmp_path / "nodata"), "--out", str(tmp_path / "m.json")]) == 2
    assert "not a triton_s2r dataset" in capsys.readouterr().err
    assert not (tmp_path / "m.json").exists()
