"""Inference: the Translator, `translate`, `export-textures` and the `demo` main job, on one tiny run.

The module fixture runs `triton-s2r demo --preset tiny --experiment tiny` once (about 30 s on 2 cores:
build the tiny benchmark, train 2 epochs, translate a sequence); every other test reuses its run. Its output
folder is shared with tests/test_notebooks.py in one pytest session (the demo reuses a finished dataset and
run, so whichever module runs first pays for them).
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

from triton_s2r.cli import main
from triton_s2r.data.datasets import BenchmarkDataset
from triton_s2r.inference.sequences import open_input
from triton_s2r.inference.translator import Translator
from triton_s2r.render import GBuffer
from triton_s2r.runs.run_dir import CheckpointError

SIZE = 64  # tiny preset resolution
FRAMES = 8  # tiny preset: frames per sequence and in the test split


@pytest.fixture(scope="module")
def translator(run_dir) -> Translator:
    return Translator.from_run_dir(run_dir, device="cpu")


def read_video(path: Path) -> list[np.ndarray]:
    with imageio.get_reader(path, format="FFMPEG") as reader:
        return [frame for frame in reader.iter_data()]  # list(reader) asks len(): inf for ffmpeg


def read_pngs(folder: Path) -> list[np.ndarray]:
    return [imageio.imread(p) for p in sorted(folder.glob("*.png"))]


def test_demo_writes_video_and_reuses_the_finished_run(demo_out, run_dir, capsys) -> None:
    video = demo_out / "videos" / "tiny_seq_000.mp4"
    frames = read_video(video)
    assert len(frames) == FRAMES and frames[0].shape == (SIZE, 4 * SIZE, 3)  # uvl | texture | translation | real
    final = run_dir / "checkpoints" / "epoch0001.ckpt"  # experiment=tiny trains 2 epochs
    mtime = final.stat().st_mtime_ns
    assert main(["demo", "--preset", "tiny", "--experiment", "tiny", "--out", str(demo_out)]) == 0
    out = capsys.readouterr().out
    assert "reused" in out and str(video) in out and "evaluation:" in out
    metrics = json.loads((demo_out / "eval" / "tiny.json").read_text())
    assert f"objects and robot {metrics['psnr_masked']:.2f} dB" in out  # the metrics are printed at the end
    assert f"warp error {metrics['warp_error']:.4f}" in out
    assert final.stat().st_mtime_ns == mtime  # not retrained


def test_demo_resumes_interrupted_training(demo_out, run_dir, tmp_path) -> None:
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
    assert len(read_video(out / "videos" / "tiny_seq_000.mp4")) == FRAMES


def test_translator_is_deterministic_with_named_outputs(translator, data_root) -> None:
    frames = BenchmarkDataset.open(data_root).uvl_frames("test")
    gbuffer = GBuffer.cat([frames[i] for i in range(3)])
    first, second = translator(gbuffer), translator(gbuffer)
    assert not translator.model.training  # eval mode: no encoder input noise
    for name in ("translation", "texture", "mask"):
        assert torch.equal(getattr(first, name), getattr(second, name)), f"{name} differs between two calls"
    assert first.translation.shape == first.texture.shape == (3, 3, SIZE, SIZE)
    assert first.translation.dtype == torch.float32 and 0 <= first.translation.min() <= first.translation.max() <= 1
    assert torch.equal(first.mask, gbuffer.label != 0) and first.mask.any() and (~first.mask).any()
    assert (first.texture[~first.mask[:, None].expand_as(first.texture)] == 0).all()  # black on void
    assert first.texture[first.mask[:, None].expand_as(first.texture)].std() > 0.01  # a texture, not a constant
    # Stateless: a frame's translation does not depend on the other frames of its batch.
    alone = translator(gbuffer[1])
    torch.testing.assert_close(alone.translation, first.translation[1:2], atol=1e-5, rtol=0)


def test_baked_texture_matches_the_exact_texture(translator, data_root) -> None:
    """Inference rasterises the fixed texture once (the paper's lookup image); per-pixel evaluation agrees."""
    frames = BenchmarkDataset.open(data_root).uvl_frames("test")
    gbuffer = GBuffer.cat([frames[i] for i in range(2)])
    assert translator.texture_resolution == 1024
    baked = translator(gbuffer)
    exact = Translator.from_run_dir(translator.run.path, device="cpu", texture_resolution=None)(gbuffer)
    assert (baked.texture - exact.texture).abs().max() < 0.02
    assert (baked.translation - exact.translation).abs().mean() < 0.01


def test_supersampled_gbuffer_gives_output_resolution(translator, data_root) -> None:
    dataset = BenchmarkDataset.open(data_root)
    source = open_input(data_root / "test" / "states.npz", translator, supersample=2)
    output = translator(source.gbuffer([0, 1]), supersample=2)
    assert output.translation.shape == (2, 3, SIZE, SIZE) and output.mask.shape == (2, SIZE, SIZE)
    # Rendering the states at the dataset's size reproduces its UVL files (16-bit PNG quantisation aside).
    rendered = open_input(data_root / "test" / "states.npz", translator).gbuffer([0])
    stored = dataset.uvl_frames("test")[0]
    assert torch.equal(rendered.label, stored.label)
    torch.testing.assert_close(translator(rendered).translation, translator(stored).translation, atol=5e-3, rtol=0)


def test_missing_run_dir_config_and_checkpoint_are_clear_errors(run_dir, tmp_path) -> None:
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
    with pytest.raises(FileNotFoundError, match=r"epoch0042\.ckpt.*epoch0000\.ckpt, epoch0001\.ckpt, last\.ckpt"):
        Translator.from_run_dir(run_dir, checkpoint="epoch0042")
    assert Translator.from_run_dir(run_dir, checkpoint="epoch0000", device="cpu").num_labels == 9


def test_translate_cli_writes_mp4_and_png_frames(run_dir, data_root, tmp_path, translator) -> None:
    video = tmp_path / "plain.mp4"
    assert main(["translate", str(run_dir), str(data_root), "--out", str(video), "--batch-size", "3",
                 "--device", "cpu"]) == 0
    frames = read_video(video)
    assert len(frames) == FRAMES and frames[0].shape == (SIZE, SIZE, 3)

    folder = tmp_path / "frames"
    assert main(["translate", str(run_dir), str(data_root), "--sequence", "test", "--out", str(folder),
                 "--batch-size", "5", "--device", "cpu"]) == 0
    pngs = read_pngs(folder)
    assert len(pngs) == FRAMES and pngs[0].shape == (SIZE, SIZE, 3)
    # The PNG frames are exactly the Translator's output, whatever the batching.
    expected = translator(BenchmarkDataset.open(data_root).uvl_frames("test")[6]).translation[0]
    assert np.abs(pngs[6].astype(int) - np.round(expected.permute(1, 2, 0).numpy() * 255)).max() <= 1


def test_side_by_side_panel_has_real_frame_only_when_input_has_one(run_dir, data_root, tmp_path) -> None:
    with_real = tmp_path / "with_real"
    assert main(["translate", str(run_dir), str(data_root / "sequences" / "seq_000"), "--out", str(with_real),
                 "--side-by-side", "--device", "cpu"]) == 0
    panel = read_pngs(with_real)[0]
    assert panel.shape == (SIZE, 4 * SIZE, 3)
    real = imageio.imread(data_root / "sequences" / "seq_000" / "real" / "000000.png")
    assert np.array_equal(panel[:, 3 * SIZE:], real[..., :3])  # the real frame, untouched

    plain = tmp_path / "uvl_only"
    shutil.copytree(data_root / "test" / "uvl", plain)
    out = tmp_path / "no_real.mp4"
    assert main(["translate", str(run_dir), str(plain), "--out", str(out), "--side-by-side", "--device", "cpu"]) == 0
    assert read_video(out)[0].shape == (SIZE, 3 * SIZE, 3)  # uvl | texture | translation


@pytest.mark.parametrize("out_name", ["broken.mp4", "broken_frames"])
def test_corrupt_frame_is_named_and_leaves_no_output(run_dir, data_root, tmp_path, capsys, out_name) -> None:
    folder = tmp_path / "seq"
    shutil.copytree(data_root / "test" / "uvl", folder / "uvl")
    (folder / "uvl" / "000005.png").write_bytes(b"\x89PNG truncated")
    out = tmp_path / "results" / out_name
    assert main(["translate", str(run_dir), str(folder), "--out", str(out), "--batch-size", "2",
                 "--device", "cpu"]) == 2  # frames 0-3 were written before the error
    assert "000005.png" in capsys.readouterr().err
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
    assert len(frames) == FRAMES and frames[0].shape == (47, 4 * 47, 3)


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


def test_export_textures_writes_pngs_and_textured_meshes(exported, data_root) -> None:
    labels = BenchmarkDataset.open(data_root).labels
    pngs = sorted((exported / "textures").glob("*.png"))
    assert [p.stem for p in pngs] == sorted(labels.names)
    assert imageio.imread(pngs[0]).shape == (256, 256, 3)
    assert len(list((exported / "obj").glob("*.obj"))) == len(list((exported / "glb").glob("*.glb"))) == 17
    for path in (exported / "obj" / "panda_link3.obj", exported / "glb" / "panda_link3.glb"):
        mesh = trimesh.load(path, force="mesh")
        assert len(mesh.faces) > 100 and mesh.visual.uv.shape == (len(mesh.vertices), 2)
        assert texture_of(mesh).size == (256, 256)
    scene = trimesh.load(exported / "scene.glb")
    assert isinstance(scene, trimesh.Scene) and len(scene.geometry) == 17
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


def test_large_batches_are_translated_in_parts(translator, data_root, monkeypatch) -> None:
    import triton_s2r.inference.translator as module

    frames = BenchmarkDataset.open(data_root).uvl_frames("test")
    gbuffer = GBuffer.cat([frames[i] for i in range(3)])
    whole = translator(gbuffer)
    monkeypatch.setattr(module, "MAX_PIXELS_PER_CALL", SIZE * SIZE)  # one frame per call
    parts = translator(gbuffer)
    for name in ("translation", "texture", "mask"):
        torch.testing.assert_close(getattr(parts, name), getattr(whole, name), atol=1e-5, rtol=0)
