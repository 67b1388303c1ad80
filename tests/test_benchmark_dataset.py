"""The tabletop benchmark: `triton-s2r make-dataset` for real (tiny preset), its format, resume and shards."""

from __future__ import annotations

import filecmp
import shutil
import warnings

import pytest
import torch
import yaml

from triton_s2r.cli import main
from triton_s2r.data.datasets import BenchmarkDataset, DatasetError, Photos, UVLFrames
from triton_s2r.render import load_scene, make_rasterizer, write_uvl
from triton_s2r.render.uvl import gbuffer_to_uvl
from triton_s2r.tabletop.mitsuba_variant import select_variant

pytest.importorskip("mitsuba")
pytest.importorskip("yourdfpy")
ARGS = ["--preset", "tiny", "--frames", "4", "--resolution", "48", "--seed", "3", "--backend", "embree"]


@pytest.fixture(scope="module")
def dataset_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench") / "tiny"
    assert main(["make-dataset", "--out", str(out), *ARGS]) == 0
    return out


def test_manifest_and_layout(dataset_dir) -> None:
    manifest = yaml.safe_load((dataset_dir / "dataset.yaml").read_text())
    assert manifest["format_version"] == 1 and manifest["resolution"] == [48, 48] and manifest["seed"] == 3
    assert manifest["labels"]["names"][:4] == ["table", "robot_base", "robot_arm", "robot_hand"]
    assert manifest["splits"]["train_sim"] == {"frames": 4, "sim": True, "real": False, "clip_frames": 2}
    assert "clip_frames" not in manifest["splits"]["test"]
    assert manifest["splits"]["train_real"] == {"frames": 4, "sim": True, "real": True}
    assert manifest["splits"]["test"]["sim"] and manifest["splits"]["test"]["real"]
    assert manifest["splits"]["sequences/seq_000"]["frames"] == 8
    assert "pybullet_data" in manifest["provenance"]["robot"]
    assert manifest["render"]["mitsuba_variant"] == select_variant()  # the variant that rendered the real frames
    ds = BenchmarkDataset.open(dataset_dir)  # every listed file is there
    assert len(ds.uvl_frames("train_sim")) == 4 and len(ds.photos("train_real")) == 4
    assert not (dataset_dir / "train_sim" / "real").exists()
    assert len(ds.uvl_frames("train_real")) == 4  # paired with its photos, for the oracle baseline only
    # The hidden albedo of every label, for eval's texture recovery only (tests/test_eval.py shows training never
    # reads it): one image per label at the appearance's resolution.
    assert manifest["hidden"]["albedo"] == "hidden/albedo/{label}.png"
    albedo = sorted((dataset_dir / "hidden" / "albedo").glob("*.png"))
    assert sorted(p.stem for p in albedo) == sorted(manifest["labels"]["names"])
    assert Photos(dataset_dir / "hidden" / "albedo")[0].shape == (3, 512, 512)
    assert not list(dataset_dir.rglob(".*"))  # no temporary files


def test_frames_are_valid_and_match_the_baked_assets(dataset_dir) -> None:
    ds = BenchmarkDataset.open(dataset_dir)
    frames = ds.uvl_frames("test")
    g = frames[0]
    assert g.uv.shape == (1, 2, 48, 48) and frames.clamped_pixels == 0
    labels_seen = set().union(*(set(frames[i].label.unique().tolist()) for i in range(len(frames))))
    assert {0, 1, 3} <= labels_seen  # void, table and robot arm are always in view
    photo = ds.photos("test")[0]
    assert photo.shape == (3, 48, 48) and 0 <= photo.min() and photo.max() <= 1 and photo.std() > 0.02
    # Re-rendering the stored states from the baked assets reproduces the stored UVL frames.
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the links of a label sit in disjoint UV tiles: no overlap warning
        scene = load_scene(dataset_dir / "assets" / "scene.yaml")
    state = ds.states("test")
    again = gbuffer_to_uvl(make_rasterizer("embree").render(scene, state.select([0])), scene.labels)
    stored = gbuffer_to_uvl(g, ds.labels)
    labels_equal = (torch.round(again[:, 2] * 255) == torch.round(stored[:, 2] * 255)).float().mean()
    assert labels_equal > 0.995
    same = torch.round(again[:, 2] * 255) == torch.round(stored[:, 2] * 255)
    assert (again[:, :2] - stored[:, :2]).abs().amax(1)[same].mean() < 1e-3


def test_sequences_move_smoothly(dataset_dir) -> None:
    ds = BenchmarkDataset.open(dataset_dir)
    poses = ds.states("sequences/seq_000").object_poses
    step = (poses[1:, :, :3, 3] - poses[:-1, :, :3, 3]).norm(dim=-1)  # (T-1, objects)
    assert step.max() < 0.1  # no jumps between consecutive frames
    assert step.sum(0).max() > 0.05  # but something moves
    assert torch.equal(ds.states("sequences/seq_000").camera.world_from_camera[0],
                       ds.states("sequences/seq_000").camera.world_from_camera[-1])  # fixed camera


def test_sim_clips_hold_neighbouring_frames(dataset_dir, tmp_path, capsys) -> None:
    """train_sim comes in pairs of consecutive frames by default (--sim-clip-frames 2)."""
    states = BenchmarkDataset.open(dataset_dir).states("train_sim")
    cameras, poses = states.camera.world_from_camera, states.object_poses[:, :, :3, 3]
    within = [(poses[k + 1] - poses[k]).norm(dim=-1).max() for k in (0, 2)]  # frames of one clip
    assert torch.equal(cameras[0], cameras[1]) and torch.equal(cameras[2], cameras[3])
    assert max(within) < 0.1 and not torch.equal(cameras[1], cameras[2])  # clips are independent
    assert main(["make-dataset", "--out", str(tmp_path / "odd"), *ARGS, "--sim-clip-frames", "3", "--no-real"]) == 2
    assert "4 frames do not split into clips of 3" in capsys.readouterr().err
    # Resuming into a folder built with other clips would mix two kinds of states: refused.
    assert main(["make-dataset", "--out", str(dataset_dir), *ARGS, "--sim-clip-frames", "1"]) == 2
    assert "sim_clip_frames: stored 2, requested 1" in capsys.readouterr().err


def test_interrupted_build_resumes_and_shards_reproduce_it(dataset_dir, tmp_path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(dataset_dir, copy)
    lost = [copy / "test" / "real" / "000001.png", copy / "train_sim" / "uvl" / "000002.png"]
    for path in lost:
        path.unlink()
    (copy / "test" / "real" / ".000001.abc.png").write_bytes(b"half-written")  # a killed writer's leftover
    with pytest.raises(DatasetError, match=r"missing.*make-dataset"):
        BenchmarkDataset.open(copy)
    # Two shards, run one after the other into the same folder, finish the job.
    for shard in ("0/2", "1/2"):
        assert main(["make-dataset", "--out", str(copy), *ARGS, "--shard", shard]) == 0
    BenchmarkDataset.open(copy)
    for path in lost:  # deterministic: the regenerated frames are byte-identical
        assert filecmp.cmp(path, dataset_dir / path.relative_to(copy), shallow=False)
    # A fresh build from shards alone equals the single-process build.
    sharded = tmp_path / "sharded"
    for shard in ("1/2", "0/2"):
        assert main(["make-dataset", "--out", str(sharded), *ARGS, "--shard", shard]) == 0
    for name in ("sequences/seq_000/real/000005.png", "test/uvl/000003.png", "train_real/real/000000.png"):
        assert filecmp.cmp(sharded / name, dataset_dir / name, shallow=False)


def test_user_folders_are_validated(tmp_path, dataset_dir) -> None:
    ds = BenchmarkDataset.open(dataset_dir)
    folder = tmp_path / "uvl"
    folder.mkdir()
    g = ds.uvl_frames("test")[0]
    uvl = gbuffer_to_uvl(g, ds.labels)[0]
    write_uvl(folder / "a.exr", uvl)
    bad = uvl.clone()
    row, col = (g.label[0] != 0).nonzero()[0].tolist()
    bad[0, row, col] = 1.02  # a UV slightly above 1, as Blender sometimes writes
    write_uvl(folder / "b.exr", bad)
    write_uvl(folder / "c.exr", uvl[:, :40])
    frames = UVLFrames(folder, ds.labels)
    assert len(frames) == 3 and frames[0].uv.shape == (1, 2, 48, 48)
    with pytest.warns(UserWarning, match="b.exr.*clamped"):
        clamped = frames[1]
    assert frames.clamped_pixels == 1 and clamped.uv.max() <= 1
    with pytest.raises(DatasetError, match=r"c\.exr: frame is 40x48"):
        frames[2]
    photos = tmp_path / "photos"
    photos.mkdir()
    (photos / "broken.jpg").write_bytes(b"not a jpeg")
    with pytest.raises(DatasetError, match="broken.jpg"):
        Photos(photos)[0]
    with pytest.raises(DatasetError, match="no UVL frame files"):
        UVLFrames(photos, ds.labels)
    with pytest.raises(DatasetError, match="not a triton_s2r dataset"):
        BenchmarkDataset.open(tmp_path)


def test_cli_rejects_bad_arguments(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["make-dataset", "--out", "x", "--shard", "2/2"])
    assert "0 <= I < N" in capsys.readouterr().err
    assert main(["make-dataset", "--out", "x", "--preset", "tiny", "--frames", "0"]) == 2
    assert "frames must be >= 1" in capsys.readouterr().err
