"""Pieces of a Mitsuba 3 scene dictionary for one frame: posed meshes, BSDFs, the sensor and the lights.

Each piece matches what the UVL rasterizer sees: the same posed geometry (``posed_shapes``) and the same
OpenCV camera (``frame_sensor``), so every "real" frame is pixel-aligned with its UVL frame.

For a batch of frames, ``shape_groups`` makes every mesh once in its own frame (with its BVH) and
``posed_instances`` places it per frame, so a frame's scene costs a BVH over a few instances instead of one
over every triangle.
"""

from __future__ import annotations

import math
from types import ModuleType
from typing import Any

import numpy as np

from triton_s2r.render.camera import Camera
from triton_s2r.render.scene import FrameState, Scene
from triton_s2r.tabletop.camera_effects import srgb_to_linear
from triton_s2r.tabletop.lighting import FrameLighting
from triton_s2r.tabletop.materials import Material
from triton_s2r.tabletop.render_mesh import RenderMesh, render_mesh


def posed_shapes(mi: ModuleType, scene: Scene, state: FrameState, index: int, bsdfs: dict[int, Any]) -> dict:
    """``load_dict`` entries of every object posed for frame ``index``."""
    poses = _poses(state, index)
    return {_shape_key(i): _mitsuba_mesh(mi, obj.name, render_mesh(obj.mesh), pose, bsdfs[obj.label])
            for i, (obj, pose) in enumerate(zip(scene.objects, poses, strict=True))}


def shape_groups(mi: ModuleType, scene: Scene, bsdfs: dict[int, Any]) -> dict[str, Any]:
    """``load_dict`` entries of one ``shapegroup`` per object: its mesh in its own frame, built once (BVH too)."""
    groups = {}
    for i, obj in enumerate(scene.objects):
        mesh = _mitsuba_mesh(mi, obj.name, render_mesh(obj.mesh), np.eye(4), bsdfs[obj.label])
        groups[_group_key(i)] = mi.load_dict({"type": "shapegroup", "mesh": mesh})
    return groups


def posed_instances(mi: ModuleType, groups: dict[str, Any], state: FrameState, index: int) -> dict:
    """``load_dict`` entries that place each object's shape group (``shape_groups``) at its pose in frame ``index``.

    The scene dictionary must hold ``groups`` too (Mitsuba builds an instance's scene from its group's).
    """
    return {_shape_key(i): {"type": "instance", "shapegroup": groups[_group_key(i)],
                            "to_world": mi.ScalarTransform4f(pose.tolist())}
            for i, pose in enumerate(_poses(state, index))}


def frame_parameters(entries: dict) -> dict[str, Any]:
    """The ``mi.traverse`` values that turn a loaded scene into the frame that ``entries`` describe.

    Args:
        entries: one frame's ``frame_sensor`` (under ``"sensor"``), ``frame_lights`` and ``posed_instances``
            entries, as given to ``mi.load_dict``.

    Returns:
        Parameter key -> value (Mitsuba scalar types) for every entry that changes between frames: the camera's
        pose, field of view and principal point, the lights, and every instance's pose.
    """
    sensor, environment, light = entries["sensor"], entries["environment"], entries["key_light"]
    values: dict[str, Any] = {
        "sensor.to_world": sensor["to_world"],
        "sensor.x_fov": sensor["fov"],  # the sensor's fov_axis is "x"
        "sensor.principal_point_offset_x": sensor["principal_point_offset_x"],
        "sensor.principal_point_offset_y": sensor["principal_point_offset_y"],
        "environment.scale": environment["scale"],
        "environment.to_world": environment["to_world"],
        "key_light.to_world": light["to_world"],
        "key_light.emitter.radiance.value": light["emitter"]["radiance"]["value"],
    }
    values.update({f"{key}.to_world": entry["to_world"] for key, entry in entries.items()
                   if isinstance(entry, dict) and entry.get("type") == "instance"})
    return values


def _posed_vertices(mesh: RenderMesh, world_from_object: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(V, 3) float32 world-space positions and unit normals (by the inverse transpose) of a posed mesh."""
    linear, shift = world_from_object[:3, :3], world_from_object[:3, 3]
    positions = mesh.positions @ linear.T + shift
    normals = mesh.normals @ np.linalg.inv(linear)
    normals /= np.maximum(np.linalg.norm(normals, axis=1, keepdims=True), 1e-20)
    return positions.astype(np.float32), normals.astype(np.float32)


def _poses(state: FrameState, index: int) -> np.ndarray:
    return state.object_poses[index].detach().cpu().numpy().astype(np.float64)


def _shape_key(i: int) -> str:
    return f"object_{i:03d}"


def _group_key(i: int) -> str:
    return f"group_{i:03d}"


def _mitsuba_mesh(mi: ModuleType, name: str, mesh: RenderMesh, world_from_object: np.ndarray, bsdf: Any) -> Any:
    """A ``mi.Mesh`` with the vertices posed in world space."""
    positions, normals = _posed_vertices(mesh, world_from_object)
    props = mi.Properties()
    props["bsdf"] = bsdf
    out = mi.Mesh(name, len(positions), len(mesh.faces), props, has_vertex_normals=True, has_vertex_texcoords=True)
    params = mi.traverse(out)
    floats, ints = type(params["vertex_positions"]), type(params["faces"])
    params["vertex_positions"] = floats(positions.ravel())
    params["vertex_normals"] = floats(normals.ravel())
    params["vertex_texcoords"] = floats(mesh.texcoords.ravel())
    params["faces"] = ints(mesh.faces.ravel())
    params.update()
    return out


def material_bsdf(mi: ModuleType, material: Material) -> Any:
    """A two-sided ``principled`` BSDF with the material's maps.

    Albedo images are sRGB-encoded (like photos of the surface), so they are linearised here and handed
    over ``raw``. Two-sided because open meshes (a can without lids, robot shells) show their insides, and
    the UVL rasterizer labels those pixels too.
    """
    def bitmap(array: np.ndarray) -> dict:
        return {"type": "bitmap", "bitmap": mi.Bitmap(np.ascontiguousarray(array, dtype=np.float32)), "raw": True}

    principled = {
        "type": "principled",
        "base_color": bitmap(srgb_to_linear(material.albedo)),
        "roughness": bitmap(material.roughness[..., None]),
        "metallic": bitmap(material.metallic[..., None]) if material.metallic.any() else 0.0,
        "specular": material.specular,
        "clearcoat": material.clearcoat,
    }
    return mi.load_dict({"type": "twosided", "bsdf": principled})


def frame_sensor(mi: ModuleType, camera: Camera, index: int, sampler: dict) -> dict:
    """A Mitsuba ``perspective`` sensor identical to frame ``index`` of our OpenCV camera.

    Mitsuba's camera frame is x left, y up, z forward, so the x and y axes are negated. Its film
    coordinates put pixel j's centre at j + 0.5, ours at j, and ``principal_point_offset`` moves the
    principal point by that fraction of the image size towards smaller pixel coordinates (checked by
    rendering), so ``offset = ((W - 1) / 2 - cx) / W``.
    """
    fx, fy, cx, cy = (float(x) for x in camera.intrinsics[index])
    if abs(fx - fy) > 1e-4 * fx:
        raise ValueError(f"Mitsuba's perspective camera needs square pixels, got fx={fx}, fy={fy}")
    width, height = camera.width, camera.height
    to_world = camera.world_from_camera[index].detach().cpu().numpy().astype(np.float64) @ np.diag([-1, -1, 1, 1])
    return {
        "type": "perspective",
        "fov_axis": "x",
        "fov": math.degrees(2 * math.atan(width / (2 * fx))),
        "principal_point_offset_x": ((width - 1) / 2 - cx) / width,
        "principal_point_offset_y": ((height - 1) / 2 - cy) / height,
        "near_clip": camera.near,
        "far_clip": camera.far,
        "to_world": mi.ScalarTransform4f(to_world.tolist()),
        # A box filter keeps every sample inside its own pixel, as the rasterizer's pixel footprint.
        "film": {"type": "hdrfilm", "width": width, "height": height, "rfilter": {"type": "box"},
                 "pixel_format": "rgb"},
        "sampler": sampler,
    }


def object_corners(scene: Scene) -> list[np.ndarray]:
    """(8, 3) float64 corners of each object's bounding box in its own frame, in ``scene.objects`` order."""
    out = []
    for obj in scene.objects:
        lo, hi = obj.mesh.v_pos.min(0).values.double().numpy(), obj.mesh.v_pos.max(0).values.double().numpy()
        out.append(np.array([[(lo, hi)[i][0], (lo, hi)[j][1], (lo, hi)[k][2]]
                             for i in (0, 1) for j in (0, 1) for k in (0, 1)]))
    return out


def world_bounds(corners: list[np.ndarray], state: FrameState, index: int) -> tuple[np.ndarray, float]:
    """Centre (3,) and radius of the bounding box of frame ``index``'s posed objects.

    Args:
        corners: ``object_corners(scene)`` (computed once: it reads every vertex).
        state: the frames' object poses.
        index: the frame.
    """
    lo, hi = np.full(3, np.inf), np.full(3, -np.inf)
    for box, pose in zip(corners, _poses(state, index), strict=True):
        posed = box @ pose[:3, :3].T + pose[:3, 3]
        lo, hi = np.minimum(lo, posed.min(0)), np.maximum(hi, posed.max(0))
    return (lo + hi) / 2, float(np.linalg.norm(hi - lo) / 2)


def frame_lights(mi: ModuleType, env: np.ndarray, lighting: FrameLighting, centre: np.ndarray, radius: float) -> dict:
    """The environment map and the square key light above the scene, as ``load_dict`` entries."""
    rotate = (mi.ScalarTransform4f().rotate([0, 0, 1], lighting.env_yaw_deg)
              @ mi.ScalarTransform4f().rotate([1, 0, 0], 90))  # Mitsuba's envmap is y-up, our world z-up
    position = centre + radius * lighting.light_offset
    to_centre = centre - position
    distance = float(np.linalg.norm(to_centre))
    side = lighting.light_size * radius
    # Radiance that gives the drawn irradiance at the centre: E = L * A * cos / d^2 for a small source.
    radiance = lighting.light_irradiance * distance**2 / (side**2 * max(1e-3, -to_centre[2] / distance))
    up = [0, 1, 0] if abs(to_centre[1]) < 0.9 * distance else [1, 0, 0]
    frame = mi.ScalarTransform4f().look_at(origin=position.tolist(), target=centre.tolist(), up=up)
    return {
        "environment": {"type": "envmap", "bitmap": mi.Bitmap(env), "scale": lighting.env_strength,
                        "to_world": rotate},
        "key_light": {
            "type": "rectangle",
            "to_world": frame @ mi.ScalarTransform4f().scale([side / 2, side / 2, 1]),
            "emitter": {"type": "area", "radiance": {"type": "rgb", "value": radiance.tolist()}},
        },
    }

