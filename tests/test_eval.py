"""`triton-s2r eval` end to end on the session's tiny run and on frames folders, texture recovery, and its errors.

Counts (labels, frames, sequences) come from the dataset's manifest.
"""

from __future__ import annotations

import json
import math
import shutil
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest
import torch
import yaml

from triton_s2r.cli import main
from triton_s2r.data.datasets import BenchmarkDataset, DatasetError, read_photo
from triton_s2r.evaluation.evaluate import evaluate
from triton_s2r.evaluation.texture_recovery import read_hidden_albedo
from triton_s2r.inference.translator import Translator
from triton_s2r.models.texture_space import sample_label_textures
from triton_s2r.render.gbuffer import GBuffer
from triton_s2r.utils.files import write_image


def paired_counts(manifest: dict) -> dict[str, int]:
    """What eval counts: frames of the test split, sequences, and frames of all sequences."""
    sequences = {name: info for name, info in manifest["splits"].items() if name.startswith("sequences/")}
    return {"n_frames": manifest["splits"]["test"]["frames"], "n_sequences": len(sequences),
            "n_sequence_frames": sum(info["frames"] for info in sequences.values())}


def test_eval_writes_every_metric(run_dir, data_root, manifest, tmp_path, capsys) -> None:
    out = tmp_path / "metrics" / "tiny.json"
    assert main(["eval", str(run_dir), str(data_root), "--out", str(out), "--device", "cpu"]) == 0
    result = json.loads(out.read_text())
    for key in ("psnr", "ssim", "psnr_masked", "ssim_masked", "haarpsi", "haarpsi_masked", "texture_psnr",
                "surface_consistency", "surface_consistency_real", "warp_error", "warp_error_real"):
        assert isinstance(result[key], float) and math.isfinite(result[key]), key
    assert 0 < result["psnr"] <= 100 and -1 <= result["ssim"] <= 1
    assert 0 < result["haarpsi"] < 1 and 0 < result["haarpsi_masked"] < 1  # a tiny epoch is far from real
    assert result["source"] == "run" and result["frames_dir"] is None
    # One entry per label and the void; the labels on screen in some test frame have a score.
    by_label = result["psnr_by_label"]
    assert list(by_label) == ["void", *manifest["labels"]["names"]]
    frames = BenchmarkDataset.open(data_root).uvl_frames("test")
    on_screen = set().union(*(frames[i].label.unique().tolist() for i in range(len(frames))))
    assert {0, 1} <= on_screen  # void and table at least
    assert [k for k, v in enumerate(by_label.values()) if v is not None] == sorted(on_screen)
    assert all(0 < v <= 100 for v in by_label.values() if v is not None), by_label
    # Colour error per label: the same labels scored; the objects' mean lies within their range.
    colour = result["colour_error_by_label"]
    assert list(colour) == list(by_label)
    assert [k for k, v in enumerate(colour.values()) if v is not None] == sorted(on_screen)
    assert all(0 <= v <= 1 for v in colour.values() if v is not None), colour
    objects = [v for k, v in colour.items() if k not in ("void", "table") and v is not None]
    assert min(objects) <= result["colour_error_masked"] <= max(objects)
    contrast = result["contrast_ratio_by_label"]  # translation against real: >= 0, on the same labels
    assert [k for k, v in enumerate(contrast.values()) if v is not None] == sorted(on_screen)
    assert all(v >= 0 for v in contrast.values() if v is not None) and result["contrast_ratio_masked"] >= 0
    detail = result["detail_ratio_by_label"]  # the same labels, void's included
    assert [k for k, v in enumerate(detail.values()) if v is not None] == sorted(on_screen)
    assert all(v >= 0 for v in detail.values() if v is not None) and result["detail_ratio_masked"] >= 0
    # How the run's real->sim translator labels the real frames: an IoU per label, the void always shown.
    iou = result["real_label_iou_by_label"]
    assert list(iou) == list(by_label) and iou["void"] is not None
    assert all(0 <= v <= 1 for v in iou.values() if v is not None), iou
    shown_objects = [v for k, v in iou.items() if k not in ("void", "table") and v is not None]
    assert result["real_label_iou_masked"] == pytest.approx(sum(shown_objects) / len(shown_objects))
    # Flicker per label: every label but the void, each a colour difference; the whole-frame number is a
    # pixel-weighted mean of them, so it lies within their range.
    for key in ("warp_error_by_label", "warp_error_by_label_real"):
        warp = result[key]
        assert list(warp) == list(by_label)[1:], key
        seen = [v for v in warp.values() if v is not None]
        assert seen and all(0 <= v <= 1 for v in seen), warp
        assert min(seen) - 1e-6 <= result[key.replace("_by_label", "")] <= max(seen) + 1e-6, key
    assert {key: result[key] for key in paired_counts(manifest)} == paired_counts(manifest)
    assert result["fid"] is None and "weights" in result["absent"]["lpips"]
    assert result["dataset"] == str(data_root.resolve()) and result["checkpoint"] == "last"
    assert "psnr=" in capsys.readouterr().out
    # Reality's own flicker is positive (lights and noise change per frame) and measured on the same pixels.
    assert result["surface_consistency_real"] > 0 and result["warp_error_real"] > 0
    assert 0 < result["texture_psnr_constant"] < 100  # a flat texture recovers part of the albedo, not all


@pytest.mark.slow
def test_demo_wrote_its_evaluation(demo_out) -> None:
    """The default tier: tests/test_translate.py::test_demo_reuses_a_finished_dataset_and_run."""
    result = json.loads((demo_out / "eval" / "tiny.json").read_text())
    assert math.isfinite(result["psnr"]) and result["checkpoint"].endswith("last.ckpt")


def test_eval_refuses_unpaired_split(run_dir, data_root, tmp_path) -> None:
    with pytest.raises(ValueError, match="'train_sim' is not a paired split"):
        evaluate(run_dir, data_root, split="train_sim", device="cpu", progress=False)


def test_eval_missing_inputs_are_clear_errors(run_dir, tmp_path, capsys) -> None:
    assert main(["eval", str(run_dir), str(tmp_path / "nodata"), "--out", str(tmp_path / "m.json")]) == 2
    assert "not a triton_s2r dataset" in capsys.readouterr().err
    assert not (tmp_path / "m.json").exists()


def real_frames_folder(data_root: Path, out: Path) -> Path:
    """A frames folder holding the dataset's own real frames: what a perfect translator would write."""
    for split in ("test", "sequences/seq_000"):
        shutil.copytree(data_root / split / "real", out / split)
    return out


def test_eval_of_the_real_frames_themselves_is_perfect(data_root, manifest, tmp_path, capsys) -> None:
    frames = real_frames_folder(data_root, tmp_path / "frames")
    out = tmp_path / "real.json"
    assert main(["eval", str(frames), str(data_root), "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["source"] == "frames" and result["frames_dir"] == str(frames.resolve()) and result["run_dir"] is None
    assert result["psnr"] == result["psnr_masked"] == 100.0  # identical frames score the cap
    assert result["ssim"] == pytest.approx(1.0) and result["ssim_masked"] == pytest.approx(1.0)
    assert result["haarpsi"] == pytest.approx(1.0, abs=1e-6)
    assert result["haarpsi_masked"] == pytest.approx(1.0, abs=1e-6)
    assert all(v == 100.0 for v in result["psnr_by_label"].values())
    assert result["colour_error_masked"] == 0.0
    assert all(v == 0.0 for v in result["colour_error_by_label"].values())
    assert result["contrast_ratio_masked"] == pytest.approx(1.0)  # each label as distinct as in the real frame
    assert all(v == pytest.approx(1.0) for v in result["contrast_ratio_by_label"].values() if v is not None)
    assert result["detail_ratio_masked"] == pytest.approx(1.0)  # each label as detailed as in the real frame
    assert all(v == pytest.approx(1.0) for v in result["detail_ratio_by_label"].values() if v is not None)
    # The frames are the real ones, so their flicker is reality's own.
    assert result["warp_error"] == pytest.approx(result["warp_error_real"])
    assert result["surface_consistency"] == pytest.approx(result["surface_consistency_real"])
    assert {key: result[key] for key in paired_counts(manifest)} == paired_counts(manifest)
    assert result["texture_psnr"] is None and "run directory" in result["absent"]["texture_psnr"]
    assert result["texture_colour_psnr"] is None and "run directory" in result["absent"]["texture_colour_psnr"]
    assert 0 < result["texture_psnr_constant"] < 100  # the dataset's level, reported for any source
    assert result["real_label_iou_masked"] is None and "run directory" in result["absent"]["real_label_iou_masked"]
    assert "from a frames folder" in capsys.readouterr().out


def test_eval_of_frames_without_sequences_scores_the_paired_split(data_root, tmp_path) -> None:
    frames = tmp_path / "frames"
    shutil.copytree(data_root / "test" / "real", frames / "test")
    result = evaluate(frames, data_root, progress=False)
    assert result["psnr"] == 100.0 and result["n_sequences"] == 0
    assert result["warp_error"] is None and "sequences/" in result["absent"]["warp_error"]


def test_eval_matches_copies_of_one_shape_to_the_real_colours_that_fit(data_root, manifest, tmp_path) -> None:
    # The real frames with block_a and block_b swapped: each painted in the other's mean real colour of the frame.
    frames = real_frames_folder(data_root, tmp_path / "frames")
    dataset = BenchmarkDataset.open(data_root)
    a, b = (dataset.labels.id_of(name) for name in ("block_a", "block_b"))
    uvl = dataset.uvl_frames("test")
    for i, path in enumerate(dataset.frame_paths("test", "real")):
        label, image = uvl[i].label[0], read_photo(path)  # (H, W), (3, H, W)
        if (label == a).any() and (label == b).any():
            means = {k: image[:, label == k].mean(1, keepdim=True) for k in (a, b)}
            image[:, label == a], image[:, label == b] = means[b], means[a]
            write_image(frames / "test" / path.name, (image.permute(1, 2, 0).numpy() * 255).round().astype(np.uint8))
    result = evaluate(frames, data_root, progress=False)
    blocks = [name for name in manifest["labels"]["names"] if name.startswith("block_")]
    assert result["interchangeable_labels"] == [blocks]  # the benchmark's blocks are one cube
    assert result["colour_assignment"] == {"block_a": "block_b", "block_b": "block_a",
                                           **{name: name for name in blocks[2:]}}
    assert result["colour_error_by_label"]["block_a"] > 0.01  # the wrong block's colour, as paired
    for name in ("block_a", "block_b"):  # the right colours up to the swap, and 8-bit rounding
        assert result["colour_error_assigned_by_label"][name] == pytest.approx(0.0, abs=0.003)
    others = {k: v for k, v in result["colour_error_by_label"].items() if k not in ("block_a", "block_b")}
    assert {k: result["colour_error_assigned_by_label"][k] for k in others} == others
    assert result["colour_error_assigned_masked"] < result["colour_error_masked"]


def test_eval_of_frames_errors_name_the_file(data_root, manifest, tmp_path) -> None:
    frames = real_frames_folder(data_root, tmp_path / "frames")
    (frames / "test" / "000003.png").unlink()
    count, (height, width) = manifest["splits"]["test"]["frames"], manifest["resolution"]
    with pytest.raises(DatasetError, match=rf"test: 1 of {count} frames missing \(first: 000003.png\)"):
        evaluate(frames, data_root, progress=False)
    small = np.zeros((height // 2, width // 2, 3), np.uint8)
    cv2.imwrite(str(frames / "test" / "000003.png"), small)
    with pytest.raises(DatasetError, match=rf"000003.png: frame is {height // 2}x{width // 2} \(HxW\) but the "
                                           rf"dataset's frames are {height}x{width}"):
        evaluate(frames, data_root, progress=False)
    with pytest.raises(FileNotFoundError, match="neither a run directory .* nor a frames folder"):
        evaluate(tmp_path / "empty", data_root, progress=False)


def test_texture_recovery_of_the_run_and_of_perfect_textures(run_dir, data_root, monkeypatch) -> None:
    result = evaluate(run_dir, data_root, device="cpu", progress=False, texture_resolution=64)
    by_label = result["texture_psnr_by_label"]
    assert list(by_label) == list(BenchmarkDataset.open(data_root).labels.names)
    shown = [v for v in by_label.values() if v is not None]
    assert shown and all(0 < v < 60 for v in shown), by_label  # a tiny epoch recovers little
    assert result["texture_psnr"] == pytest.approx(sum(shown) / len(shown), rel=1e-6)
    assert "texture_psnr" not in result["absent"]
    # A model whose textures are the hidden albedo itself scores the cap on every label it shows.
    hidden = read_hidden_albedo(BenchmarkDataset.open(data_root), 64)
    monkeypatch.setattr(Translator, "bake_textures", lambda self, resolution: hidden)
    perfect = evaluate(run_dir, data_root, device="cpu", progress=False, texture_resolution=64)
    assert perfect["texture_psnr"] == 100.0 and perfect["texture_colour_psnr"] == 100.0
    assert [k for k, v in perfect["texture_psnr_by_label"].items() if v is None] == \
        [k for k, v in by_label.items() if v is None]
    assert perfect["texture_psnr_constant"] == result["texture_psnr_constant"] < 100.0
    # The labels' true colours on random labels recover less than each label's own mean colour.
    assert 0 < result["texture_colour_psnr_shuffled"] < result["texture_psnr_constant"]
    assert 0 < result["texture_colour_psnr"] < 60 and "texture_colour_psnr" not in result["absent"]
    # Textures of one colour per label, any colours, score the constant level: no pattern, nothing recovered.
    flat = torch.rand(hidden.shape[0], 3, 1, 1, generator=torch.Generator().manual_seed(0)).expand_as(hidden)
    monkeypatch.setattr(Translator, "bake_textures", lambda self, resolution: flat)
    coloured = evaluate(run_dir, data_root, device="cpu", progress=False, texture_resolution=64)
    assert coloured["texture_psnr"] == pytest.approx(result["texture_psnr_constant"], abs=1e-4)


def test_datasets_without_hidden_textures_report_null(run_dir, data_root, tmp_path) -> None:
    old = tmp_path / "old"
    shutil.copytree(data_root, old, ignore=shutil.ignore_patterns("hidden"))
    manifest = yaml.safe_load((old / "dataset.yaml").read_text())
    del manifest["hidden"]
    (old / "dataset.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    result = evaluate(run_dir, old, device="cpu", progress=False)
    assert result["texture_psnr"] is None and all(v is None for v in result["texture_psnr_by_label"].values())
    assert "make-dataset" in result["absent"]["texture_psnr"] and math.isfinite(result["psnr"])
    assert result["texture_psnr_constant"] is None and "make-dataset" in result["absent"]["texture_psnr_constant"]
    assert result["texture_colour_psnr"] is None and "make-dataset" in result["absent"]["texture_colour_psnr"]


def test_hidden_albedo_is_where_the_uvs_say(data_root) -> None:
    """Projected through the test G-buffers, the stored albedo looks like the real frames; with u and v swapped not.

    A u/v swap is a layout mistake. Within each label (its mean colour taken out, which a swap keeps) the layout
    alone decides.
    """
    dataset = BenchmarkDataset.open(data_root)
    hidden = read_hidden_albedo(dataset, 128)
    frames = dataset.uvl_frames("test")
    gbuffer = GBuffer.cat([frames[i] for i in range(len(frames))])
    real = torch.stack([dataset.photos("test")[i] for i in range(len(frames))])
    mask = gbuffer.label > 0
    label = gbuffer.label[mask]

    def correlation(textures: torch.Tensor, within_labels: bool) -> float:
        projected = sample_label_textures(textures, gbuffer.uv, gbuffer.label).permute(0, 2, 3, 1)[mask]
        seen = real.permute(0, 2, 3, 1)[mask]
        if within_labels:
            for value in label.unique():
                projected[label == value] -= projected[label == value].mean(0)
                seen[label == value] -= seen[label == value].mean(0)
        return float(torch.corrcoef(torch.stack([projected.flatten(), seen.flatten()]))[0, 1])

    assert correlation(hidden, within_labels=False) > 0.5
    right, swapped = correlation(hidden, True), correlation(hidden.transpose(2, 3), True)
    assert right > 0.15 and right > swapped + 0.15, (right, swapped)


def test_training_never_reads_the_hidden_textures(data_root, tmp_path) -> None:
    """Train with the hidden folder gone, and with every Python-level access to it recorded."""
    hidden, away = data_root / "hidden", tmp_path / "hidden_away"
    touched: list[str] = []
    watching = [True]

    def audit(event: str, args: tuple) -> None:
        if watching[0] and event in ("open", "os.listdir", "os.scandir") and args and "hidden" in str(args[0]):
            touched.append(f"{event} {args[0]}")

    sys.addaudithook(audit)  # hooks cannot be removed; this one goes quiet after the test
    shutil.move(hidden, away)
    try:
        assert main(["train", "experiment=tiny", "logger=none", "trainer.enable_progress_bar=false",
                     f"data.root={data_root}", f"hydra.run.dir={tmp_path / 'run'}", "+trainer.fast_dev_run=1"]) == 0
    finally:
        watching[0] = False
        shutil.move(away, hidden)
    assert not touched, touched
