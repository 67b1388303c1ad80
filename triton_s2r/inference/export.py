"""``triton-s2r export-textures``: the learned textures as images, on the scene's meshes as OBJ and glTF.

Examples::

    triton-s2r export-textures outputs/runs/demo --out outputs/textures/demo --resolution 1024

Writes, under OUT::

    textures/<label>.png      one RGB image per label (u to the right, v up: the OBJ / glTF convention)
    obj/<object>.obj, .mtl    each baked mesh in its own frame, textured (map_Kd = obj/<label>.png)
    glb/<object>.glb          the same, binary glTF with the texture embedded
    scene.glb                 all objects at the poses of the training data's first test frame (z-up world
                              turned to glTF's y-up), to look at the whole learned scene in a viewer

Meshes come from the run's copy of its training scene (``RUN/scene``); a run trained on plain UVL folders
has none, and only the images are written.
Texture layout: ``Translator.bake_textures`` returns rasters with rows following u and columns following v
(``models/texture_space.py``); image viewers, OBJ and trimesh put u along the columns and v up the rows,
so ``texture_image`` transposes and flips. ``tests/test_translate.py`` checks the round trip: the exported
image looked up at a mesh's UVs equals the model's texture there.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import trimesh
import trimesh.exchange.obj
import trimesh.visual
from PIL import Image
from torch import Tensor

from triton_s2r.inference.translator import Translator
from triton_s2r.render.mesh import Mesh
from triton_s2r.render.scene import Scene
from triton_s2r.utils.files import atomic_write, write_image

#: glTF is y-up; our world frame is z-up (tabletop/scene.py): x stays, y_gltf = z, z_gltf = -y.
Z_UP_TO_Y_UP = np.array([[1, 0, 0, 0], [0, 0, 1, 0], [0, -1, 0, 0], [0, 0, 0, 1]], dtype=np.float64)


@dataclass(frozen=True)
class ExportResult:
    """Files written by ``export_textures``.

    Attributes:
        textures: label name -> PNG path.
        obj: one OBJ per scene object (empty without a scene).
        glb: one GLB per scene object (empty without a scene).
        scene_glb: all objects posed in one GLB, or None (no scene, or no states to pose them).
    """

    textures: dict[str, Path]
    obj: list[Path]
    glb: list[Path]
    scene_glb: Path | None


def texture_image(texture: Tensor) -> np.ndarray:
    """One baked texture as an ordinary image.

    Args:
        texture: (C >= 3, R, R) in [0, 1], rows following u and columns following v (``bake`` layout).

    Returns:
        (R, R, 3) uint8 RGB; pixel (row y, column x) shows ``(u, v) = ((x + 0.5) / R, 1 - (y + 0.5) / R)``:
        u to the right, v up, as OBJ, glTF (after its own v flip, which trimesh applies) and viewers expect.
    """
    rgb = texture[:3].float().permute(2, 1, 0).flip(0)  # (v, u, C) -> v up
    return np.round(rgb.clamp(0, 1).cpu().numpy() * 255).astype(np.uint8)


def textured_mesh(mesh: Mesh, image: Image.Image, material_name: str) -> trimesh.Trimesh:
    """A trimesh with one vertex per distinct (position, UV) corner pair, textured with ``image``."""
    corners = torch.stack([mesh.t_pos_idx.reshape(-1), mesh.t_uv_idx.reshape(-1)], dim=1)
    pairs, inverse = torch.unique(corners, dim=0, return_inverse=True)
    material = trimesh.visual.material.SimpleMaterial(
        image=image, name=material_name,
        # White diffuse: viewers multiply Kd / baseColorFactor with the texture, trimesh's default is grey.
        diffuse=(255, 255, 255, 255), ambient=(255, 255, 255, 255), specular=(0, 0, 0, 255),
    )
    return trimesh.Trimesh(
        vertices=mesh.v_pos[pairs[:, 0]].numpy(), faces=inverse.reshape(-1, 3).numpy(), process=False,
        visual=trimesh.visual.TextureVisuals(uv=mesh.v_uv[pairs[:, 1]].numpy(), material=material),
    )


def _write_bytes(path: Path, data: bytes | str) -> None:
    with atomic_write(path) as tmp:
        tmp.write_bytes(data.encode() if isinstance(data, str) else data)


def export_textures(
    translator: Translator,
    out: str | os.PathLike,
    *,
    resolution: int = 1024,
    scene: Scene | None = None,
    object_poses: Tensor | None = None,
) -> ExportResult:
    """Bake every label's texture to PNG and write the scene's meshes with them (OBJ and GLB).

    Args:
        translator: the loaded run.
        out: output folder (created; files in it are replaced).
        resolution: texture side R in pixels.
        scene: meshes to texture; default the run's copy of its training scene (none for a run trained on
            plain UVL folders).
        object_poses: (N, 4, 4) world-from-object poses that assemble ``scene.glb``; default the frame the run
            kept with its scene (the training data's first test frame).

    Returns:
        The written paths.
    """
    out = Path(out)
    if scene is None and translator.run is not None and translator.run.keeps_scene():
        scene = translator.scene()
        object_poses = translator.run.scene_pose() if object_poses is None else object_poses
    names = scene.labels.names if scene is not None else translator.labels.names
    if len(names) != translator.num_labels:
        raise ValueError(f"the scene has {len(names)} labels but the run's model {translator.num_labels}; export "
                         f"with the scene the run was trained on")
    baked = translator.bake_textures(resolution).cpu()  # (K, 3, R, R)
    images = [texture_image(t) for t in baked]

    (out / "textures").mkdir(parents=True, exist_ok=True)
    textures = {}
    for name, image in zip(names, images, strict=True):
        textures[name] = out / "textures" / f"{name}.png"
        write_image(textures[name], image)
    if scene is None:
        return ExportResult(textures, [], [], None)

    pil = [Image.fromarray(image) for image in images]
    (out / "obj").mkdir(exist_ok=True)
    (out / "glb").mkdir(exist_ok=True)
    obj_paths, glb_paths, meshes = [], [], {}
    for obj in scene.objects:
        label = names[obj.label - 1]
        mesh = meshes[obj.name] = textured_mesh(obj.mesh, pil[obj.label - 1], label)
        text, files = trimesh.exchange.obj.export_obj(mesh, include_normals=False, return_texture=True,
                                                      mtl_name=f"{obj.name}.mtl")
        for file_name, data in files.items():  # the .mtl and <label>.png (same bytes for a shared label)
            _write_bytes(out / "obj" / file_name, data)
        obj_paths.append(out / "obj" / f"{obj.name}.obj")
        _write_bytes(obj_paths[-1], text)
        glb_paths.append(out / "glb" / f"{obj.name}.glb")
        glb = trimesh.Scene({obj.name: mesh}).export(file_type="glb")
        _write_bytes(glb_paths[-1], glb)  # pyright: ignore[reportArgumentType]  # glb: bytes (trimesh's union type)

    scene_glb = None
    if object_poses is not None:
        if object_poses.shape[0] != scene.num_objects:
            raise ValueError(f"poses of {object_poses.shape[0]} objects but the scene has {scene.num_objects}")
        assembled = trimesh.Scene()
        for obj, world_from_object in zip(scene.objects, object_poses.double().numpy(), strict=True):
            assembled.add_geometry(meshes[obj.name], node_name=obj.name, geom_name=obj.name,
                                   transform=Z_UP_TO_Y_UP @ world_from_object)
        scene_glb = out / "scene.glb"
        _write_bytes(scene_glb, assembled.export(file_type="glb"))  # pyright: ignore[reportArgumentType]  # bytes
    return ExportResult(textures, obj_paths, glb_paths, scene_glb)

