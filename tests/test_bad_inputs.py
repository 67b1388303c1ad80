"""The bad-input corpus of the data layer: each bad file or argument gets an error naming it and the fix.

Every case writes a real file (EXR / PNG UVL frames, OBJ meshes, scene files, photos, manifests, datasets)
into ``tmp_path`` and checks the error, the CLI's exit status and that nothing half-written is left behind.
One tiny sim-only benchmark (``--no-real``, 32 px) is built per module for the make-dataset cases.
"""

from __future__ import annotations

import hashlib
import math
import re
import shutil

import cv2
import numpy as np
import OpenEXR
import pytest
import torch
import trimesh
import yaml

from triton_s2r.cli import main
from triton_s2r.data.datasets import BenchmarkDataset, DatasetError, Photos, UVLFrames, read_photo
from triton_s2r.inference.sequences import translate
from triton_s2r.inference.video import frame_writer
from triton_s2r.render import LabelTable, MeshError, UVLFileError, load_mesh, load_scene, uvl_to_gbuffer, write_uvl
from triton_s2r.render import mesh as mesh_module
from triton_s2r.render.primitives import box
from triton_s2r.render.uvl import load_uvl_gbuffer, read_uvl
from triton_s2r.tabletop.scene import NOMINAL_TARGET, nominal_eye

LABELS = LabelTable(("table", "block"), (255, 50), void_value=0)


def uvl_frame(size: int = 8) -> torch.Tensor:
    """(3, size, size) UVL image: UVs in [0, 1], every pixel the "block" label."""
    uvl = torch.rand(3, size, size, generator=torch.Generator().manual_seed(0))
    uvl[2] = 50 / 255
    return uvl


# --- UVL files -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("channel", "value", "half", "named"),
    [(0, math.nan, False, "1 in u"), (1, math.inf, False, "1 in v"), (2, math.nan, False, "1 in label"),
     (2, -math.inf, True, "1 in label")],
    ids=["nan-u", "inf-v", "nan-label", "neg-inf-label-half"],
)
def test_uvl_exr_with_nan_or_inf_names_file_and_channel(tmp_path, channel, value, half, named) -> None:
    uvl = uvl_frame()
    uvl[channel, 3, 4] = value
    path = tmp_path / "frame.exr"
    write_uvl(path, uvl, half=half)
    # Before: NaN UVs decoded to a black frame (exit 0), a NaN label to an IndexError.
    with pytest.raises(UVLFileError, match=rf"frame\.exr: NaN or infinite values \({named}\).*re-export"):
        load_uvl_gbuffer(path, LABELS)
    with pytest.raises(UVLFileError, match=r"frame\.exr"):
        UVLFrames(tmp_path, LABELS)[0]  # the folder reader used by training and translate


def test_uvl_in_memory_nan_label_is_a_clear_error_not_an_index_error() -> None:
    uvl = uvl_frame()[None].repeat(2, 1, 1, 1)
    uvl[1, 2] = math.nan
    with pytest.raises(UVLFileError, match=r"batch\.exr: NaN or infinite values \(64 in label\)"):
        uvl_to_gbuffer(uvl, LABELS, source="batch.exr")


def test_uvl_exr_without_rgb_channels_names_the_channels(tmp_path) -> None:
    header = {"compression": OpenEXR.ZIP_COMPRESSION, "type": OpenEXR.scanlineimage}
    with OpenEXR.File(header, {"Y": np.zeros((4, 4), np.float32), "A": np.ones((4, 4), np.float32)}) as f:
        f.write(str(tmp_path / "gray.exr"))
    with pytest.raises(UVLFileError, match=r"gray\.exr: EXR needs R, G, B channels, found \['A', 'Y'\]"):
        read_uvl(tmp_path / "gray.exr")


def test_uvl_16bit_grayscale_png_is_refused(tmp_path) -> None:
    cv2.imwrite(str(tmp_path / "gray.png"), np.zeros((4, 4), np.uint16))
    with pytest.raises(UVLFileError, match=r"gray\.png: UVL PNGs must be 16-bit RGB.*shape \(4, 4\)"):
        read_uvl(tmp_path / "gray.png")


def test_uvl_truncated_exr_names_the_file(tmp_path) -> None:
    write_uvl(tmp_path / "whole.exr", uvl_frame(32))
    data = (tmp_path / "whole.exr").read_bytes()
    (tmp_path / "cut.exr").write_bytes(data[: len(data) // 2])  # valid header, missing pixel data
    with pytest.raises(UVLFileError, match=r"cut\.exr: not a readable OpenEXR file.*re-export or delete it"):
        read_uvl(tmp_path / "cut.exr")


# --- Meshes and scene files ------------------------------------------------------------------------------------

def write_box_obj(path, *, vertex: tuple[int, float] | None = None, with_uv: bool = True) -> None:
    """A box as OBJ, UV-mapped unless ``with_uv=False``; ``vertex=(i, value)`` overwrites vertex i's x coordinate."""
    m = box((0.2, 0.3, 0.4))
    v_pos = m.v_pos.numpy().copy()
    if vertex is not None:
        v_pos[vertex[0], 0] = vertex[1]
    visual = trimesh.visual.TextureVisuals(uv=m.v_uv.numpy()) if with_uv else None
    mesh = trimesh.Trimesh(v_pos, m.t_pos_idx.numpy(), process=False, visual=visual)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(trimesh.exchange.obj.export_obj(mesh, include_normals=False, write_texture=False))


@pytest.mark.parametrize("value", [math.nan, math.inf], ids=["nan", "inf"])
@pytest.mark.parametrize("unwrap", [False, True], ids=["uv", "unwrap"])
def test_mesh_with_non_finite_vertex_is_refused_at_load(tmp_path, monkeypatch, value, unwrap) -> None:
    write_box_obj(tmp_path / "bad.obj", vertex=(5, value), with_uv=not unwrap)
    monkeypatch.setattr(mesh_module, "require", lambda *a, **k: pytest.fail("xatlas reached with a NaN vertex"))
    # Before: accepted, then a render error naming no file.
    with pytest.raises(MeshError, match=r"bad\.obj: 1 of \d+ vertex positions are NaN or infinite; fix or re-export"):
        load_mesh(tmp_path / "bad.obj", unwrap=unwrap)


def test_mesh_with_nan_uv_is_refused_naming_the_file(tmp_path) -> None:
    write_box_obj(tmp_path / "uv.obj")
    text = re.sub(r"^vt \S+", "vt nan", (tmp_path / "uv.obj").read_text(), count=1, flags=re.MULTILINE)
    (tmp_path / "uv.obj").write_text(text)
    with pytest.raises(MeshError, match=r"uv\.obj: this mesh has no usable UVs: its texture coordinates contain NaN"):
        load_mesh(tmp_path / "uv.obj")


def scene_yaml(mesh: str) -> str:
    return f"labels:\n  - {{name: crate, value: 60}}\nobjects:\n  - {{name: crate, label: crate, mesh: '{mesh}'}}\n"


@pytest.mark.parametrize("mesh", ["../outside.obj", "meshes/../../outside.obj"])
def test_scene_mesh_path_may_not_leave_the_scene_folder(tmp_path, mesh) -> None:
    write_box_obj(tmp_path / "outside.obj")  # exists: the path, not a missing file, is the problem
    (tmp_path / "scenes").mkdir()
    (tmp_path / "scenes" / "scene.yaml").write_text(scene_yaml(mesh))
    with pytest.raises(ValueError, match=rf"scene\.yaml: object 'crate': mesh path '{mesh}' leaves the scene "
                                         r"file's folder.*absolute path"):
        load_scene(tmp_path / "scenes" / "scene.yaml")


def test_scene_mesh_paths_inside_the_folder_or_absolute_are_allowed(tmp_path) -> None:
    write_box_obj(tmp_path / "elsewhere" / "crate.obj")
    write_box_obj(tmp_path / "scenes" / "meshes" / "crate.obj")
    (tmp_path / "scenes" / "inside.yaml").write_text(scene_yaml("meshes/./sub/../crate.obj"))
    (tmp_path / "scenes" / "absolute.yaml").write_text(scene_yaml(str(tmp_path / "elsewhere" / "crate.obj")))
    (tmp_path / "scenes" / "meshes" / "sub").mkdir()
    for name in ("inside.yaml", "absolute.yaml"):
        assert load_scene(tmp_path / "scenes" / name).objects[0].mesh.num_triangles == 12


def test_scene_with_non_finite_mesh_names_the_mesh_file(tmp_path) -> None:
    write_box_obj(tmp_path / "meshes" / "crate.obj", vertex=(0, math.inf))
    (tmp_path / "scene.yaml").write_text(scene_yaml("meshes/crate.obj"))
    with pytest.raises(MeshError, match=r"meshes/crate\.obj: 1 of \d+ vertex positions are NaN or infinite"):
        load_scene(tmp_path / "scene.yaml")


def test_unwrap_cache_goes_to_the_cache_folder_keyed_by_content(tmp_path, monkeypatch) -> None:
    pytest.importorskip("xatlas")
    monkeypatch.setenv("TRITON_S2R_CACHE", str(tmp_path / "cache"))
    m = box((0.2, 0.3, 0.4))
    plain = trimesh.Trimesh(m.v_pos.numpy(), m.t_pos_idx.numpy(), process=False)  # no UVs: needs an unwrap
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        plain.export(tmp_path / name / "plain.obj")
    first = load_mesh(tmp_path / "a" / "plain.obj", unwrap=True)
    entries = list((tmp_path / "cache" / "unwrap").iterdir())
    digest = hashlib.sha256((tmp_path / "a" / "plain.obj").read_bytes()).hexdigest()
    assert [p.name for p in entries] == [f"{digest}.xatlas.npz"]
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["plain.obj"]
    # An identical copy elsewhere reuses the entry (same content, same key); no second file appears.
    second = load_mesh(tmp_path / "b" / "plain.obj", unwrap=True)
    assert torch.equal(first.v_uv, second.v_uv) and len(list((tmp_path / "cache" / "unwrap").iterdir())) == 1
    assert sorted(p.name for p in (tmp_path / "b").iterdir()) == ["plain.obj"]
    # XDG_CACHE_HOME is the default when TRITON_S2R_CACHE is unset.
    from triton_s2r.utils.cache import cache_dir

    monkeypatch.delenv("TRITON_S2R_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "triton_s2r"


# --- Photo folders ---------------------------------------------------------------------------------------------

def write_photo(path, height: int, width: int, value: int = 128) -> None:
    assert cv2.imwrite(str(path), np.full((height, width, 3), value, np.uint8))


def test_photos_of_mixed_sizes_are_refused_at_construction(tmp_path) -> None:
    for name, (h, w) in {"a.png": (32, 32), "b.png": (32, 32), "c.jpg": (24, 40)}.items():
        write_photo(tmp_path / name, h, w)
    # Before: accepted, then a DataLoader collate traceback naming no file.
    with pytest.raises(DatasetError, match=r"photos of 2 different sizes.*32x32: 2 file\(s\), e\.g\. a\.png; "
                                           r"24x40: 1 file\(s\), e\.g\. c\.jpg\).*resize all photos to one size"):
        Photos(tmp_path)


def test_tiny_photos_warn_naming_folder_and_size(tmp_path) -> None:
    write_photo(tmp_path / "a.png", 16, 20)
    with pytest.warns(UserWarning, match=r"photos are 16x20 \(HxW\), shorter side 16 < 32 needed for training"):
        photos = Photos(tmp_path, min_short_side=32)
    assert photos[0].shape == (3, 16, 20)  # still readable: a warning, not an error


def test_huge_photo_is_decoded_reduced_to_max_short_side(tmp_path, monkeypatch) -> None:
    write_photo(tmp_path / "huge.png", 4096, 6144, value=200)  # single colour: cheap to write and decode
    decoded = []
    imread = cv2.imread

    def recording_imread(path: str, flag: int) -> np.ndarray:
        image = imread(path, flag)
        decoded.append(image.shape)
        return image

    monkeypatch.setattr(cv2, "imread", recording_imread)
    photo = read_photo(tmp_path / "huge.png", max_short_side=300)
    assert decoded == [(512, 768, 3)]  # decoded at 1/8 (short side 512 >= 300), never at 4096x6144
    assert photo.shape == (3, 300, 450) and torch.allclose(photo, torch.tensor(200 / 255))  # then area-resized
    monkeypatch.undo()
    tall = tmp_path / "tall" / "000000.png"
    tall.parent.mkdir()
    write_photo(tall, 1000, 500)
    assert read_photo(tall, max_short_side=200).shape == (3, 400, 200)  # 1/2 decode, then resize
    assert read_photo(tall, max_short_side=500).shape == (3, 1000, 500)  # never upsampled
    assert read_photo(tall).shape == (3, 1000, 500)  # the old signature: full size
    assert Photos(tall.parent, max_short_side=64)[0].shape == (3, 128, 64)
    with pytest.raises(ValueError, match="max_short_side must be a positive integer"):
        read_photo(tall, max_short_side=0)


@pytest.mark.parametrize("name", ["broken.jpg", "truncated.png"])
def test_corrupt_photo_is_named_when_the_folder_is_opened(tmp_path, name) -> None:
    write_photo(tmp_path / "good.png", 8, 8)
    data = (tmp_path / "good.png").read_bytes()
    (tmp_path / name).write_bytes(b"not a jpeg" if name.endswith(".jpg") else data[:12])
    with pytest.raises(DatasetError, match=rf"{name.replace('.', '[.]')}: not a readable image.*re-export or delete"):
        Photos(tmp_path)


# --- Dataset manifests -----------------------------------------------------------------------------------------

MANIFEST = {"format_version": 1, "labels": {"names": ["table"], "values": [255], "void_value": 0},
            "resolution": [32, 32], "uvl_format": "png", "splits": {"test": {"frames": 0, "sim": True, "real": False}}}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (yaml.safe_dump({"format_version": 2, "layout": "new"}), r"format version 2 is not supported.*upgrade"),
        (yaml.safe_dump([MANIFEST]), r"a manifest must be a YAML mapping .* got list"),
        (yaml.safe_dump({k: v for k, v in MANIFEST.items() if k != "format_version"}), r"no format_version"),
        ("format_version: [1\n", r"not a readable YAML file"),
        (yaml.safe_dump({k: v for k, v in MANIFEST.items() if k != "labels"}), r"missing labels; rebuild"),
        (yaml.safe_dump({**MANIFEST, "splits": ["test"]}), r"splits must map split names to mappings"),
    ],
    ids=["future-version-first", "not-a-mapping", "no-version", "bad-yaml", "no-labels", "bad-splits"],
)
def test_bad_manifest_names_dataset_yaml_and_the_problem(tmp_path, text, message) -> None:
    (tmp_path / "dataset.yaml").write_text(text)
    with pytest.raises(DatasetError, match=rf"dataset\.yaml: .*{message}"):
        BenchmarkDataset.open(tmp_path, check_files=False)


def test_manifest_without_scene_file_is_named_where_the_scene_is_needed(tmp_path) -> None:
    (tmp_path / "dataset.yaml").write_text(yaml.safe_dump(MANIFEST))  # valid, but names no scene file
    dataset = BenchmarkDataset.open(tmp_path, check_files=False)
    with pytest.raises(DatasetError, match=r"dataset\.yaml names no scene file \(key `scene`\); rebuild"):
        _ = dataset.scene_file


# --- make-dataset into a folder built with other arguments -----------------------------------------------------

ARGS = ["--preset", "tiny", "--frames", "4", "--resolution", "32", "--seed", "3", "--backend", "embree", "--no-real"]


@pytest.fixture(scope="module")
def sim_dataset(tmp_path_factory):
    """A tiny sim-only benchmark (no path tracing): 4 + 4 + 4 + 8 frames of 32x32."""
    pytest.importorskip("yourdfpy")
    pytest.importorskip("pybullet")
    out = tmp_path_factory.mktemp("bench") / "sim"
    assert main(["make-dataset", "--out", str(out), *ARGS]) == 0
    return out


def snapshot(folder) -> dict[str, tuple[int, int]]:
    """Every file under ``folder`` with its size and modification time: any write shows up."""
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}


def with_arg(args: list[str], flag: str, value: str) -> list[str]:
    args = list(args)
    args[args.index(flag) + 1] = value
    return args


def test_make_dataset_into_a_folder_built_otherwise_is_refused_before_writing(sim_dataset, tmp_path, capsys) -> None:
    folder = tmp_path / "copy"
    shutil.copytree(sim_dataset, folder)
    before = snapshot(folder)
    args = with_arg(with_arg(ARGS, "--seed", "4"), "--resolution", "40") + ["--uvl-format", "exr"]
    # Before: exit 0, the manifest and states replaced and the old frames kept (a silently mixed dataset).
    assert main(["make-dataset", "--out", str(folder), *args]) == 2
    err = capsys.readouterr().err
    for difference in ("seed: stored 3, requested 4", "resolution: stored 32, requested 40",
                       "uvl_format: stored 'png', requested 'exr'"):
        assert difference in err
    assert "frames: stored" not in err and "another --out folder, or pass --rebuild" in err
    assert snapshot(folder) == before  # nothing written, not even the manifest or the states


def test_old_manifest_without_build_is_compared_by_what_it_records(sim_dataset, tmp_path, capsys) -> None:
    folder = tmp_path / "old"
    shutil.copytree(sim_dataset, folder)
    manifest = yaml.safe_load((folder / "dataset.yaml").read_text())
    del manifest["build"]  # as written before the build mapping existed
    (folder / "dataset.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    before = snapshot(folder)
    assert main(["make-dataset", "--out", str(folder), *with_arg(ARGS, "--frames", "6"), "--sim-clip-frames",
                 "1"]) == 2
    err = capsys.readouterr().err
    assert "sim_clip_frames: stored 2, requested 1" in err and "frames per split: stored {'train_sim': 4" in err
    assert "'train_sim': 6" in err and snapshot(folder) == before
    assert main(["make-dataset", "--out", str(folder), *ARGS]) == 0  # the same arguments still resume it
    assert yaml.safe_load((folder / "dataset.yaml").read_text())["build"]["seed"] == 3  # now recorded


def test_another_camera_azimuth_is_another_dataset(sim_dataset, tmp_path, capsys) -> None:
    folder = tmp_path / "azimuth"
    shutil.copytree(sim_dataset, folder)
    manifest = yaml.safe_load((folder / "dataset.yaml").read_text())
    del manifest["build"]["camera_azimuth_deg"]  # as written before the option existed: built at 0 degrees
    (folder / "dataset.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    before = snapshot(folder)
    assert main(["make-dataset", "--out", str(folder), *ARGS, "--camera-azimuth", "40"]) == 2
    assert "camera_azimuth_deg: stored 0.0, requested 40.0" in capsys.readouterr().err
    assert snapshot(folder) == before
    assert main(["make-dataset", "--out", str(folder), *ARGS]) == 0  # the same arguments still resume it
    assert main(["make-dataset", "--out", str(folder), *ARGS, "--camera-azimuth", "40", "--rebuild"]) == 0
    # The same draws (states, jitter) from the same seed, every camera moved by the orbit of the nominal view.
    old, new = (np.load(f / "test" / "states.npz")["world_from_camera"][:, :3, 3] for f in (sim_dataset, folder))
    assert np.allclose(new - old, nominal_eye(40.0) - nominal_eye(0.0), atol=1e-5)
    offsets = [nominal_eye(a) - np.asarray(NOMINAL_TARGET) for a in (0.0, 40.0)]
    assert math.isclose(np.linalg.norm(offsets[0]), np.linalg.norm(offsets[1]))  # the same distance, height
    assert math.isclose(offsets[0][2], offsets[1][2])
    turn = math.degrees(math.atan2(offsets[1][1], offsets[1][0]) - math.atan2(offsets[0][1], offsets[0][0]))
    assert math.isclose(turn % 360, 40.0)


def test_rebuild_deletes_only_the_dataset_and_builds_from_scratch(sim_dataset, tmp_path) -> None:
    folder = tmp_path / "rebuilt"
    shutil.copytree(sim_dataset, folder)
    (folder / "notes.txt").write_text("mine")  # the user's own files stay
    (folder / "train_sim" / "uvl" / "000099.png").write_bytes(b"a frame of the old dataset")
    old_frame = (folder / "test" / "uvl" / "000000.png").read_bytes()
    args = [*with_arg(ARGS, "--seed", "5"), "--rebuild"]
    assert main(["make-dataset", "--out", str(folder), *args]) == 0
    assert (folder / "notes.txt").read_text() == "mine"
    assert not (folder / "train_sim" / "uvl" / "000099.png").exists()  # no stale frame survives
    assert (folder / "test" / "uvl" / "000000.png").read_bytes() != old_frame  # new seed, new states
    assert yaml.safe_load((folder / "dataset.yaml").read_text())["build"] == {
        "preset": "tiny", "seed": 5, "frames": 4, "resolution": 32, "uvl_format": "png", "real": False,
        "sim_clip_frames": 2, "camera_azimuth_deg": 0.0}
    BenchmarkDataset.open(folder)  # complete
    before = snapshot(folder)
    assert main(["make-dataset", "--out", str(folder), *with_arg(ARGS, "--seed", "5")]) == 0  # resumes: no-op
    assert {k: v for k, v in snapshot(folder).items() if "uvl" in k} == {k: v for k, v in before.items() if "uvl" in k}


def test_make_dataset_over_a_future_manifest_reports_the_version(tmp_path, capsys) -> None:
    (tmp_path / "dataset.yaml").write_text(yaml.safe_dump({"format_version": 2}))
    assert main(["make-dataset", "--out", str(tmp_path), *ARGS]) == 2
    assert "format version 2 is not supported" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dataset.yaml"]


# --- Video output ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("fps", ["0", "-5", "nan", "inf", "ten"])
def test_translate_and_demo_cli_reject_a_bad_fps_before_any_work(tmp_path, capsys, fps) -> None:
    out = tmp_path / "video.mp4"
    for command in (["translate", str(tmp_path / "run"), str(tmp_path / "frames"), "--out", str(out)],
                    ["demo", "--out", str(tmp_path / "demo")]):
        with pytest.raises(SystemExit) as exit_info:
            main([*command, f"--fps={fps}"])
        assert exit_info.value.code == 2
        assert f"--fps: expected a positive, finite frame rate such as 10 or 29.97, got '{fps}'" in (
            capsys.readouterr().err)
    assert list(tmp_path.iterdir()) == []  # before: a 0-byte video.mp4 and exit 0


@pytest.mark.parametrize("fps", [0, -1.0, math.nan], ids=["zero", "negative", "nan"])
def test_frame_writer_and_translate_reject_a_bad_fps(tmp_path, fps) -> None:
    out = tmp_path / "video.mp4"
    with pytest.raises(ValueError, match=r"fps must be a positive, finite number"):
        with frame_writer(out, fps=fps) as write:
            write(np.zeros((2, 8, 8, 3), np.uint8))
    with pytest.raises(ValueError, match=r"fps must be a positive, finite number"):
        translate(tmp_path / "no_run", tmp_path / "no_input", out, fps=fps)  # before loading the run
    assert list(tmp_path.iterdir()) == []


def test_ffmpeg_failure_raises_and_leaves_the_previous_video(tmp_path) -> None:
    out = tmp_path / "video.mp4"
    with frame_writer(out, fps=10) as write:
        write(np.full((3, 16, 16, 3), 90, np.uint8))
    previous = out.read_bytes()
    # libx264 refuses frames wider than 16384 pixels: a real ffmpeg failure (exit status != 0, no output).
    with pytest.raises(OSError, match=r"video\.mp4: ffmpeg failed writing the video \(exit status \d+\): .*libx264"):
        with frame_writer(out, fps=10) as write:
            write(np.zeros((3, 2, 16386, 3), np.uint8))
    assert out.read_bytes() == previous and sorted(p.name for p in tmp_path.iterdir()) == ["video.mp4"]
    with pytest.raises(OSError, match=r"new\.mp4: ffmpeg failed"):  # and no file where there was none
        with frame_writer(tmp_path / "new.mp4", fps=10) as write:
            write(np.zeros((3, 2, 16386, 3), np.uint8))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["video.mp4"]
