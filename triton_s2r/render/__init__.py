"""Scene model and UVL rendering: meshes, cameras, G-buffers, UVL files, and the two render backends."""

from triton_s2r.render.camera import Camera
from triton_s2r.render.gbuffer import VOID, GBuffer
from triton_s2r.render.mesh import Mesh, MeshError, load_mesh
from triton_s2r.render.rasterizer import BACKENDS, UVLRasterizer, make_rasterizer, nvdiffrast_available
from triton_s2r.render.scene import FrameState, LabelTable, Scene, SceneObject, load_scene
from triton_s2r.render.uvl import (
    UVLFileError,
    gbuffer_to_uvl,
    load_uvl_gbuffer,
    read_uvl,
    uvl_to_gbuffer,
    write_uvl,
)

__all__ = [
    "BACKENDS", "VOID", "Camera", "FrameState", "GBuffer", "LabelTable", "Mesh", "MeshError", "Scene",
    "SceneObject", "UVLFileError", "UVLRasterizer", "gbuffer_to_uvl", "load_mesh", "load_scene",
    "load_uvl_gbuffer", "make_rasterizer", "nvdiffrast_available", "read_uvl", "uvl_to_gbuffer", "write_uvl",
]
