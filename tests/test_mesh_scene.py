"""Mesh loading (OBJ, GLB, PLY), UV checks, automatic unwrapping, and scene files."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
import trimesh

from triton_s2r.render import FrameState, Mesh, MeshError, load_mesh, load_scene, make_rasterizer
from triton_s2r.render.primitives import box, orbit_cameras, uv_sphere


def box_trimesh(with_uv: bool = True) -> trimesh.Trimesh:
    m = box((0.2, 0.3, 0.4))
    mesh = trimesh.Trimesh(m.v_pos.numpy(), m.t_pos_idx.numpy(), process=False)
    if with_uv:
        mesh.visual = trimesh.visual.TextureVisuals(uv=m.v_uv.numpy())
    return mesh


@pytest.mark.parametrize("suffix", ["obj", "glb", "ply"])
def test_loads_meshes_with_uvs(tmp_path, suffix: str) -> None:
    path = tmp_path / f"box.{suffix}"
    box_trimesh().export(path)
    mesh = load_mesh(path)
    assert mesh.num_triangles == 12
    reference = box((0.2, 0.3, 0.4))
    # Same geometry and the same UV atlas (as a set of (position, uv) corners; formats may reorder).
    def corners(m):
        rows = torch.cat([m.v_pos[m.t_pos_idx].reshape(-1, 3), m.v_uv[m.t_uv_idx].reshape(-1, 2)], 1)
        return sorted(map(tuple, np.round(rows.numpy(), 4).tolist()))
    assert corners(mesh) == corners(reference)


def test_mesh_without_uvs_names_the_file_and_the_fix(tmp_path) -> None:
    path = tmp_path / "plain.obj"
    box_trimesh(with_uv=False).export(path)
    with pytest.raises(MeshError, match=r"plain\.obj: this mesh has no usable UVs.*unwrap=True"):
        load_mesh(path)


def test_palette_uvs_are_not_usable(tmp_path) -> None:
    mesh = box_trimesh()
    mesh.visual = trimesh.visual.TextureVisuals(uv=np.full((len(mesh.vertices), 2), 0.5))
    path = tmp_path / "palette.obj"
    mesh.export(path)
    with pytest.raises(MeshError, match="palette.obj.*zero area in UV space"):
        load_mesh(path)


def test_unreadable_and_missing_meshes(tmp_path) -> None:
    with pytest.raises(FileNotFoundError, match="nope.obj"):
        load_mesh(tmp_path / "nope.obj")
    (tmp_path / "junk.glb").write_bytes(b"\x00garbage")
    with pytest.raises(MeshError, match="junk.glb"):
        load_mesh(tmp_path / "junk.glb")


def test_unwrap_once_and_cache_in_the_cache_folder(tmp_path, monkeypatch) -> None:
    pytest.importorskip("xatlas")
    monkeypatch.setenv("TRITON_S2R_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "meshes" / "plain.obj"
    path.parent.mkdir()
    box_trimesh(with_uv=False).export(path)
    first = load_mesh(path, unwrap=True)
    [cache] = (tmp_path / "cache" / "unwrap").iterdir()  # keyed by content: <sha256>.xatlas.npz
    assert cache.name.endswith(".xatlas.npz") and list(path.parent.iterdir()) == [path]  # nothing next to the mesh
    assert ((first.v_uv >= 0) & (first.v_uv <= 1)).all()
    # The second load reads the cache: xatlas is not called again.
    import triton_s2r.render.mesh as mesh_module

    monkeypatch.setattr(mesh_module, "require", lambda *a, **k: pytest.fail("xatlas called despite the cache"))
    second = load_mesh(path, unwrap=True)
    assert torch.equal(first.v_uv, second.v_uv) and torch.equal(first.t_pos_idx, second.t_pos_idx)
    # Rendering it works (the unwrapped mesh has usable UVs).
    assert mesh_module.uv_problem(second) is None


SCENE_YAML = """
labels:
  - {name: floor, value: 255}
  - {name: crate, value: 60}
objects:
  - {name: floor, label: floor, mesh: floor.obj}
  - {name: crate, label: crate, mesh: crate.glb}
"""


def test_scene_file_loads_and_renders(tmp_path) -> None:
    floor = box_trimesh()
    floor.apply_scale([5, 5, 0.1])
    floor.export(tmp_path / "floor.obj")
    crate = box_trimesh()
    crate.apply_translation([0, 0, 0.3])
    crate.export(tmp_path / "crate.glb")
    (tmp_path / "scene.yaml").write_text(SCENE_YAML)
    scene = load_scene(tmp_path / "scene.yaml")
    assert [o.name for o in scene.objects] == ["floor", "crate"]
    assert scene.labels.values == (255, 60)
    g = make_rasterizer("embree").render(scene, FrameState.static(scene, orbit_cameras(2, width=48, height=48)))
    assert set(g.label.unique().tolist()) == {0, 1, 2}


def test_scene_file_errors_name_the_file(tmp_path) -> None:
    (tmp_path / "scene.yaml").write_text(SCENE_YAML.replace("label: crate", "label: barrel"))
    box_trimesh().export(tmp_path / "floor.obj")
    box_trimesh().export(tmp_path / "crate.glb")
    with pytest.raises(ValueError, match=r"scene\.yaml.*'barrel' is not in the label table"):
        load_scene(tmp_path / "scene.yaml")
    (tmp_path / "broken.yaml").write_text("labels: [oops")
    with pytest.raises(ValueError, match="broken.yaml"):
        load_scene(tmp_path / "broken.yaml")


def test_meshes_in_uv_tiles_stop_overlapping_and_overlap_is_reported() -> None:
    """Meshes sharing a label need their own UV regions, or one texel stands for several surfaces."""
    from triton_s2r.render.scene import LabelTable, Scene, SceneObject

    labels = LabelTable(("robot",), (255,))
    mesh = box((0.1, 0.1, 0.1))
    other = Mesh(mesh.v_pos, mesh.t_pos_idx, mesh.v_uv.flip(1), mesh.t_uv_idx)  # a different unwrap
    with pytest.warns(UserWarning, match=r"objects \['a', 'b'\] share label 'robot' and overlap in UV space"):
        Scene((SceneObject("a", 1, mesh), SceneObject("b", 1, other)), labels)
    with warnings.catch_warnings():  # copies of one object may share their texels
        warnings.simplefilter("error")
        Scene((SceneObject("a", 1, mesh), SceneObject("b", 1, mesh.transformed(torch.eye(4) * 2))), labels)
    tiles = [mesh.in_uv_tile(i, 3) for i in range(3)]  # a 2x2 grid, one tile unused
    boxes = [(t.v_uv.min(0).values, t.v_uv.max(0).values) for t in tiles]
    assert all(0 <= lo.min() and hi.max() <= 1 and (hi - lo).max() < 0.5 for lo, hi in boxes)
    assert boxes[1][0][1] >= 0.5 and boxes[2][0][0] >= 0.5  # tile 1 right of tile 0 in v, tile 2 below it in u
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Scene(tuple(SceneObject(f"link{i}", 1, t) for i, t in enumerate(tiles)), labels)
    with pytest.raises(ValueError, match="tile index 3 outside 0..2"):
        mesh.in_uv_tile(3, 3)


def test_scene_file_places_objects_of_one_label_in_uv_tiles(tmp_path) -> None:
    box_trimesh().export(tmp_path / "crate.obj")
    objects = "".join(f"  - {{name: crate{i}, label: crate, mesh: crate.obj, uv_tile: [{i}, 2]}}\n" for i in range(2))
    (tmp_path / "scene.yaml").write_text("labels:\n  - {name: crate, value: 60}\nobjects:\n" + objects)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scene = load_scene(tmp_path / "scene.yaml")
    assert scene.objects[1].mesh.v_uv[:, 1].min() >= 0.5  # the second crate's UVs are in the second tile
    (tmp_path / "bad.yaml").write_text("labels:\n  - {name: crate, value: 60}\nobjects:\n"
                                       "  - {name: crate, label: crate, mesh: crate.obj, uv_tile: [2, 2]}\n")
    with pytest.raises(ValueError, match="bad.yaml: object 'crate': uv_tile must be"):
        load_scene(tmp_path / "bad.yaml")


def test_interchangeable_labels_are_labels_of_one_shape() -> None:
    from triton_s2r.render.scene import LabelTable, Scene, SceneObject

    cube, ball = box((0.07, 0.07, 0.07)), uv_sphere(0.04)
    labels = LabelTable.evenly_spaced(["table", "block_a", "ball", "block_b", "robot", "block_c"])
    objects = [SceneObject("table", 1, box((1.0, 0.6, 0.05))), SceneObject("block_a", 2, cube),
               SceneObject("ball", 3, ball.in_uv_tile(0, 2)), SceneObject("block_b", 4, cube),
               SceneObject("block_c", 6, cube),  # two objects of two shapes under one label:
               SceneObject("link0", 5, cube.in_uv_tile(0, 2)), SceneObject("link1", 5, ball.in_uv_tile(1, 2))]
    assert Scene(tuple(objects), labels).interchangeable_labels() == [(2, 4, 6)]
    # A block of another size is another shape; a label of a cube and a ball matches only another such pair.
    objects[4] = SceneObject("block_c", 6, box((0.05, 0.07, 0.07)))
    objects.append(SceneObject("cube", 3, cube.in_uv_tile(1, 2)))
    assert Scene(tuple(objects), labels).interchangeable_labels() == [(2, 4), (3, 5)]
