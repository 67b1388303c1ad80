"""The bad-input corpus of the data layer: each bad file or argument gets an error naming it and the fix.

Every case writes a real file (EXR / PNG UVL frames, OBJ meshes, scene files, photos, manifests, datasets)
into ``tmp_path`` and checks the error, the CLI's exit status and that nothing half-written is left behind.
One tiny sim-only benchmark (``--no-real``, 32 px) is built per module for the make-dataset cases.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import shutil

import cv2
import numpy as np
import OpenEXR
import pytest
import torch
import trimesh
import yaml

from triton_s2r.datasets import BenchmarkDataset, DatasetError, Photos, UVLFrames, read_photo
from triton_s2r.render import LabelTable, MeshError, UVLFileError, load_mesh, load_scene, uvl_to_gbuffer, write_uvl
from triton_s2r.render.primitives import box
from triton_s2r.render.uvl import load_uvl_gbuffer, read_uvl

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

def write_box_obj(path, *, vertex: tuple[int, float] | None = None) -> None:
    """A UV-mapped box as OBJ; ``vertex=(i, value)`` overwrites vertex i's x coordinate."""
    m = box((0.2, 0.3, 0.4))
    v_pos = m.v_pos.numpy().copy()
    if vertex is not None:
        v_pos[vertex[0], 0] = vertex[1]
    mesh = trimesh.Trimesh(v_pos, m.t_pos_idx.numpy(), process=False,
                           visual=trimesh.visual.TextureVisuals(uv=m.v_uv.numpy()))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(trimesh.exchange.obj.export_obj(mesh, include_normals=False, write_texture=False))


@pytest.mark.parametrize("value", [math.nan, math.inf], ids=["nan", "inf"])
def test_mesh_with_non_finite_vertex_is_refused_at_load(tmp_path, value) -> None:
    write_box_obj(tmp_path / "bad.obj", vertex=(5, value))
    with pytest.raises(MeshError, match=r"bad\.obj: 1 of \d+ vertex positions are NaN or infinite; fix or re-export"):
        load_mesh(tmp_path / "bad.obj")


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
