"""Inference: the Translator, `translate`, `export-textures` and the `demo` main job, on one tiny run.

The tests use the session's tiny run on the committed tiny dataset (tests/conftest.py); sizes and frame counts
come from its dataset.yaml. The slow tier also runs the whole `triton-s2r demo --preset tiny --experiment tiny`
(build the tiny benchmark, train 2 epochs, translate a sequence), shared with tests/test_notebooks.py.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import imageio.v2 as imageio
import numpy as np
import pytest
import torch
import trimesh
import yaml
from tiny_assets import read_manifest

from triton_s2r.cli import main
from triton_s2r.data.datasets import BenchmarkDataset
from triton_s2r.inference.sequences import open_input
from triton_s2r.inference.translator import Translator
from triton_s2r.render import GBuffer
from triton_s2r.runs.run_dir import CheckpointError


def sizes(data_root: Path) -> tuple[int, int, int]:
    """(frame size, frames in the test split, frames in the first sequence) of a square dataset."""
    manifest = read_manifest(data_root)
    splits = manifest["splits"]
    return manifest["resolution"][0], splits["test"]["frames"], splits["sequences/seq_000"]["frames"]


@pytest.fixture(scope="module")
def translator(run_dir) -> Translator:
    return Translator.from_run_dir(run_dir, device="cpu")


@pytest.fixture(scope="module")
def size(data_root) -> int:
    return sizes(data_root)[0]


def read_video(path: Path) -> list[np.ndarray]:
    with imageio.get_reader(path, format="FFMPEG") as reader:
        return [frame for frame in reader.iter_data()]  # list(reader) asks len(): inf for ffmpeg


def read_pngs(folder: Path) -> list[np.ndarray]:
    return [imageio.imread(p) for p in sorted(folder.glob("*.png"))]


def test_demo_reuses_a_finished_dataset_and_run(data_root, run_dir, tmp_path, capsys) -> None:
    """The demo over a finished benchmark and run only translates the first sequence and evaluates.

    The benchmark and run are the committed dataset and the session run; the slow tier runs the whole demo from
    scratch.
    """
    out = tmp_path / "out"
    (out / "data").mkdir(parents=True)
    (out / "data" / "tiny").symlink_to(data_root)
    shutil.copytree(run_dir, out / "runs" / "tiny")
    size, _, frames = sizes(data_root)
    last = out / "runs" / "tiny" / "checkpoints" / "last.ckpt"
    mtime = last.stat().st_mtime_ns
    assert main(["demo", "--preset", "tiny", "--experiment", "tiny", "--out", str(out), "--batch-size", "4"]) == 0
    printed = capsys.readouterr().out
    video = out / "videos" / "tiny_seq_000.mp4"
    assert "reusing the finished run" in printed
    panels = read_video(video)
    assert len(panels) == frames and panels[0].shape == (size, 4 * size, 3)  # uvl | texture | translation | real
    metrics = assert_demo_printed(printed, out, video)
    assert metrics["checkpoint"].endswith("last.ckpt") and np.isfinite(metrics["psnr"])
    assert last.stat().st_mtime_ns == mtime  # not retrained


def assert_demo_printed(printed: str, out: Path, video: Path) -> dict:
    """The demo printed the video's path and, at the end, the metrics it saved in OUT/eval; returns them."""
    assert str(video) in printed and "evaluation:" in printed
    metrics = json.loads((out / "eval" / "tiny.json").read_text())
    assert f"objects and robot {metrics['psnr_masked']:.2f} dB" in printed
    assert f"warp error {metrics['warp_error']:.4f}" in printed
    assert f"stand out {metrics['contrast_ratio_masked']:.2f}x" in printed
    assert f"hold {metrics['detail_ratio_masked']:.2f}x the real frames' detail" in printed
    return metrics


@pytest.mark.slow
def test_demo_writes_video_and_reuses_the_finished_run(demo_out, capsys) -> None:
    run_dir = demo_out / "runs" / "tiny"
    size, _, frames_per_sequence = sizes(demo_out / "data" / "tiny")
    video = demo_out / "videos" / "tiny_seq_000.mp4"
    frames = read_video(video)
    assert len(frames) == frames_per_sequence and frames[0].shape == (size, 4 * size, 3)
    final = run_dir / "checkpoints" / "epoch0001.ckpt"  # experiment=tiny trains 2 epochs
    mtime = final.stat().st_mtime_ns
    assert main(["demo", "--preset", "tiny", "--experiment", "tiny", "--out", str(demo_out)]) == 0
    printed = capsys.readouterr().out
    assert "reused" in printed
    assert_demo_printed(printed, demo_out, video)
    assert final.stat().st_mtime_ns == mtime  # not retrained


@pytest.mark.slow
def test_demo_resumes_interrupted_training(demo_out, tmp_path) -> None:
    """The default tier checks the same continuation on `triton-s2r train` (tests/test_run_dir.py)."""
    run_dir = demo_out / "runs" / "tiny"
    out = tmp_path / "out"
    (out / "data").mkdir(parents=True)
    (out / "data" / "tiny").symlink_to(demo_out / "data" / "tiny")
    resumed = out / "runs" / "tiny"
    shutil.copytree(run_dir, resumed, ignore=shutil.ignore_patterns("epoch0001.ckpt", "last.ckpt", "status.yaml"))
    shutil.copy(run_dir / "checkpoints" / "epoch0000.ckpt", resumed / "checkpoints" / "last.ckpt")  # killed in epoch 1
    first_epoch = (resumed / "checkpoints" / "epoch0000.ckpt").stat().st_mtime_ns
    assert main(["demo", "--preset", "tiny", "--experiment", "tiny", "--out", str(out)]) == 0
    assert (resumed / "checkpoints" / "epoch0001.ckpt").is_file()
    # Resumed at epoch 1: a restart from scratch would have rewritten epoch 0's checkpoint.
    assert (resumed / "checkpoints" / "epoch0000.ckpt").stat().st_mtime_ns == first_epoch
    assert len(read_video(out / "videos" / "tiny_seq_000.mp4")) == sizes(demo_out / "data" / "tiny")[2]


def test_translator_is_deterministic_with_named_outputs(translator, data_root, size) -> None:
    frames = BenchmarkDataset.open(data_root).uvl_frames("test")
    gbuffer = GBuffer.cat([frames[i] for i in range(3)])
    first, second = translator(gbuffer), translator(gbuffer)
    assert not translator.model.training  # eval mode: no encoder input noise
    for name in ("translation", "texture", "mask"):
        assert torch.equal(getattr(first, name), getattr(second, name)), f"{name} differs between two calls"
    assert first.translation.shape == first.texture.shape == (3, 3, size, size)
    assert first.translation.dtype == torch.float32 and 0 <= first.translation.min() <= first.translation.max() <= 1
    assert torch.equal(first.mask, gbuffer.label != 0) and first.mask.any() and (~first.mask).any()
    assert (first.texture[~first.mask[:, None].expand_as(first.texture)] == 0).all()  # black on void
    assert first.texture[first.mask[:, None].expand_as(first.texture)].std() > 0.01  # a texture, not a constant
    # Stateless: a frame's translation does not depend on the other frames of its batch.
    alone = translator(gbuffer[1])
    torch.testing.assert_close(alone.translation, first.translation[1:2], atol=1e-5, rtol=0)


def test_label_photos_labels_real_frames_of_any_size(translator, data_root) -> None:
    photos = BenchmarkDataset.open(data_root).photos("test")
    real = torch.stack([photos[0], photos[1]])[..., :30, :29]  # not a multiple of the generator's 4: padded
    labels = translator.label_photos(real)
    assert labels.shape == (2, 30, 29) and labels.dtype == torch.int64
    assert 0 <= int(labels.min()) and int(labels.max()) <= translator.num_labels
    assert torch.equal(labels, translator.label_photos(real))  # deterministic (eval mode, no input noise)


def test_baked_texture_matches_the_exact_texture(translator, data_root) -> None:
    """Inference rasterises the fixed texture once (the paper's lookup image); per-pixel evaluation agrees."""
    frames = BenchmarkDataset.open(data_root).uvl_frames("test")
    gbuffer = GBuffer.cat([frames[i] for i in range(2)])
    assert translator.texture_resolution == 1024
    baked = translator(gbuffer)
    exact = Translator.from_run_dir(translator.run.path, device="cpu", texture_resolution=None)(gbuffer)
    assert (baked.texture - exact.texture).abs().max() < 0.02
    assert (baked.translation - exact.translation).abs().mean() < 0.01


def test_supersampled_gbuffer_gives_output_resolution(translator, data_root, size) -> None:
    dataset = BenchmarkDataset.open(data_root)
    source = open_input(data_root / "test" / "states.npz", translator, supersample=2)
    output = translator(source.gbuffer([0, 1]), supersample=2)
    assert output.translation.shape == (2, 3, size, size) and output.mask.shape == (2, size, size)
    # Rendering the states at the dataset's size reproduces its UVL files: 16-bit PNG quantisation aside, the UVs
    # agree but for a pixel or so on a UV seam, which the translator's convolutions spread to its neighbours and its
    # per-image normalisation over the frame (a mean difference of 0.0104 with the tiny run trained in fp32, on a CPU
    # without bf16 instructions).
    rendered = open_input(data_root / "test" / "states.npz", translator).gbuffer([0])
    stored = dataset.uvl_frames("test")[0]
    assert torch.equal(rendered.label, stored.label)
    assert ((rendered.uv - stored.uv).abs().amax(1) > 1e-4).float().mean() < 0.005
    assert (translator(rendered).translation - translator(stored).translation).abs().mean() < 0.02


def test_missing_run_dir_config_and_checkpoint_are_clear_errors(run_dir, manifest, tmp_path) -> None:
    with pytest.raises(FileNotFoundError, match=r"run directory not found: .*nowhere"):
        Translator.from_run_dir(tmp_path / "nowhere")
    with pytest.raises(FileNotFoundError, match=r"config\.yaml not found"):
        Translator.from_run_dir(tmp_path)
    shutil.copy(run_dir / "config.yaml", tmp_path / "config.yaml")
    with pytest.raises(FileNotFoundError, match=r"last\.ckpt.*no checkpoints yet"):
        Translator.from_run_dir(tmp_path)
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "checkpoints" / "last.ckpt").write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError, match=r"last\.ckpt: not a readable checkpoint"):
        Translator.from_run_dir(tmp_path)
    with pytest.raises(FileNotFoundError, match=r"epoch0042\.ckpt.*best\.ckpt, epoch0000\.ckpt, last\.ckpt"):
        Translator.from_run_dir(run_dir, checkpoint="epoch0042")
    num_labels = len(manifest["labels"]["names"])
    assert Translator.from_run_dir(run_dir, checkpoint="epoch0000", device="cpu").num_labels == num_labels


def test_translate_cli_writes_mp4_and_png_frames(run_dir, data_root, tmp_path, translator) -> None:
    size, test_frames, sequence_frames = sizes(data_root)
    video = tmp_path / "plain.mp4"
    assert main(["translate", str(run_dir), str(data_root), "--out", str(video), "--batch-size", "3",
                 "--device", "cpu"]) == 0
    frames = read_video(video)  # the dataset's first sequence
    assert len(frames) == sequence_frames and frames[0].shape == (size, size, 3)

    folder = tmp_path / "frames"
    assert main(["translate", str(run_dir), str(data_root), "--sequence", "test", "--out", str(folder),
                 "--batch-size", "3", "--device", "cpu"]) == 0
    pngs = read_pngs(folder)
    assert len(pngs) == test_frames and pngs[0].shape == (size, size, 3)
    # The PNG frames are exactly the Translator's output, whatever the batching (the last one: a later batch).
    last = test_frames - 1
    assert last >= 3
    expected = translator(BenchmarkDataset.open(data_root).uvl_frames("test")[last]).translation[0]
    assert np.abs(pngs[last].astype(int) - np.round(expected.permute(1, 2, 0).numpy() * 255)).max() <= 1


def test_side_by_side_panel_has_real_frame_only_when_input_has_one(run_dir, data_root, size, tmp_path) -> None:
    with_real = tmp_path / "with_real"
    assert main(["translate", str(run_dir), str(data_root / "sequences" / "seq_000"), "--out", str(with_real),
                 "--side-by-side", "--device", "cpu"]) == 0
    panel = read_pngs(with_real)[0]
    assert panel.shape == (size, 4 * size, 3)
    real = imageio.imread(data_root / "sequences" / "seq_000" / "real" / "000000.png")
    assert np.array_equal(panel[:, 3 * size:], real[..., :3])  # the real frame, untouched

    plain = tmp_path / "uvl_only"
    shutil.copytree(data_root / "test" / "uvl", plain)
    out = tmp_path / "no_real.mp4"
    assert main(["translate", str(run_dir), str(plain), "--out", str(out), "--side-by-side", "--device", "cpu"]) == 0
    assert read_video(out)[0].shape == (size, 3 * size, 3)  # uvl | texture | translation


@pytest.mark.parametrize("out_name", ["broken.mp4", "broken_frames"])
def test_corrupt_frame_is_named_and_leaves_no_output(run_dir, data_root, tmp_path, capsys, out_name) -> None:
    folder = tmp_path / "seq"
    shutil.copytree(data_root / "sequences" / "seq_000" / "uvl", folder / "uvl")
    broken = sorted((folder / "uvl").glob("*.png"))[-1]
    broken.write_bytes(b"\x89PNG truncated")
    out = tmp_path / "results" / out_name
    assert main(["translate", str(run_dir), str(folder), "--out", str(out), "--batch-size", "2",
                 "--device", "cpu"]) == 2  # the frames of the earlier batches were written before the error
    assert broken.name in capsys.readouterr().err
    assert not out.exists() and list((tmp_path / "results").iterdir()) == []  # no temporary file left either


def test_missing_frame_of_a_dataset_sequence_is_named(run_dir, data_root, tmp_path, capsys) -> None:
    root = tmp_path / "dataset"  # the manifest and one sequence are enough to know which frames belong there
    root.mkdir()
    shutil.copy(data_root / "dataset.yaml", root / "dataset.yaml")
    shutil.copytree(data_root / "sequences" / "seq_000", root / "sequences" / "seq_000")
    (root / "sequences" / "seq_000" / "uvl" / "000003.png").unlink()
    out = tmp_path / "out.mp4"
    assert main(["translate", str(run_dir), str(root / "sequences" / "seq_000"), "--out", str(out)]) == 2
    assert "000003.png: UVL frame missing" in capsys.readouterr().err and not out.exists()


def test_states_input_renders_at_any_requested_resolution(run_dir, data_root, tmp_path) -> None:
    out = tmp_path / "states"
    assert main(["translate", str(run_dir), str(data_root / "test" / "states.npz"), "--out", str(out),
                 "--resolution", "47", "--side-by-side", "--device", "cpu"]) == 0
    frames = read_pngs(out)
    # Any size: 47 is no multiple of the generator's 4 (padded inside the Translator); real frames resized.
    assert len(frames) == sizes(data_root)[1] and frames[0].shape == (47, 4 * 47, 3)


def test_bad_inputs_are_clear_errors(run_dir, data_root, tmp_path, capsys) -> None:
    cases = [
        ([str(data_root), "--sequence", "seq_404"], "seq_404"),
        ([str(data_root / "test"), "--sequence", "test"], "dataset root"),
        ([str(tmp_path / "missing")], "input not found"),
        ([str(data_root / "test"), "--resolution", "32"], "apply to rendered states"),
    ]
    for args, message in cases:
        assert main(["translate", str(run_dir), *args, "--out", str(tmp_path / "x.mp4")]) == 2
        assert message in capsys.readouterr().err
    assert main(["translate", str(run_dir), str(data_root), "--out", str(tmp_path / "x.avi")]) == 2
    assert ".mp4" in capsys.readouterr().err
    assert not (tmp_path / "x.mp4").exists()


@pytest.fixture(scope="module")
def exported(run_dir, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("export")
    assert main(["export-textures", str(run_dir), "--out", str(out), "--resolution", "256", "--device", "cpu"]) == 0
    return out


def test_export_textures_writes_pngs_and_textured_meshes(exported, data_root, manifest) -> None:
    labels = BenchmarkDataset.open(data_root).labels
    objects = len(yaml.safe_load((data_root / manifest["scene"]).read_text())["objects"])  # the scene's meshes
    pngs = sorted((exported / "textures").glob("*.png"))
    assert [p.stem for p in pngs] == sorted(labels.names)
    assert imageio.imread(pngs[0]).shape == (256, 256, 3)
    assert len(list((exported / "obj").glob("*.obj"))) == len(list((exported / "glb").glob("*.glb"))) == objects
    for path in (exported / "obj" / "panda_link3.obj", exported / "glb" / "panda_link3.glb"):
        mesh = trimesh.load(path, force="mesh")
        assert len(mesh.faces) > 100 and mesh.visual.uv.shape == (len(mesh.vertices), 2)
        assert texture_of(mesh).size == (256, 256)
    scene = trimesh.load(exported / "scene.glb")
    assert isinstance(scene, trimesh.Scene) and len(scene.geometry) == objects
    assert scene.bounds[1][1] - scene.bounds[0][1] > 0.5  # y-up: the robot stands tall along glTF's y


def texture_of(mesh: trimesh.Trimesh):
    material = mesh.visual.material  # OBJ: SimpleMaterial.image; glTF: PBRMaterial.baseColorTexture
    return getattr(material, "image", None) or material.baseColorTexture


@pytest.mark.parametrize("path,label", [("obj/ball.obj", "ball"), ("glb/ball.glb", "ball"),
                                        ("obj/panda_link3.obj", "robot_arm")])
def test_exported_texture_orientation_round_trip(exported, translator, path, label) -> None:
    # What a viewer shows at a vertex (trimesh's own UV lookup into the exported image) must be what the
    # model's texture gives at that UV; a transposed or v-flipped export is about ten times further off.
    mesh = trimesh.load(exported / path, force="mesh")
    uv = np.asarray(mesh.visual.uv, dtype=np.float64)
    shown = trimesh.visual.color.uv_to_color(uv, texture_of(mesh))[:, :3] / 255.0
    label_id = translator.labels.id_of(label)

    def model_texture(u: np.ndarray, v: np.ndarray) -> np.ndarray:
        query = torch.tensor(np.stack([u, v]), dtype=torch.float32)[None, :, None, :]  # (1, 2, 1, N)
        with torch.no_grad():
            rgb = translator.model.texture(query, torch.full((1, 1, len(u)), label_id))
        return rgb[0, :3, 0].T.numpy()

    error = np.abs(shown - model_texture(uv[:, 0], uv[:, 1])).mean()
    transposed = np.abs(shown - model_texture(uv[:, 1], uv[:, 0])).mean()
    flipped = np.abs(shown - model_texture(uv[:, 0], 1 - uv[:, 1])).mean()
    assert error < 0.04, f"exported texture disagrees with the model at the mesh UVs (mean error {error:.3f})"
    assert transposed > 3 * error and flipped > 3 * error


def test_large_batches_are_translated_in_parts(translator, data_root, size, monkeypatch) -> None:
    import triton_s2r.inference.translator as module

    frames = BenchmarkDataset.open(data_root).uvl_frames("test")
    gbuffer = GBuffer.cat([frames[i] for i in range(3)])
    whole = translator(gbuffer)
    monkeypatch.setattr(module, "MAX_PIXELS_PER_CALL", size * size)  # one frame per call
    parts = translator(gbuffer)
    for name in ("translation", "texture", "mask"):
        torch.testing.assert_close(getattr(parts, name), getattr(whole, name), atol=1e-5, rtol=0)
