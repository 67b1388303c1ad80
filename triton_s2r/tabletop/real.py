"""The benchmark's photoreal "real" domain: the UVL scene path traced with Mitsuba 3 and hidden appearance.

Every frame is rendered from exactly the geometry and camera the UVL rasterizer sees, so each sim frame has
a pixel-aligned real counterpart (the paired ``test`` split). What the model never sees: the procedural
textures of ``triton_s2r.tabletop.appearance``, a path tracer (``path``, depth 6) with a shadow-casting
rectangular key light and a procedural room environment map, glossy ``principled`` BSDFs, and a camera
model with blur, vignetting, sensor noise and a soft highlight roll-off. Lights, exposure, white balance
and noise are jittered per frame from ``(seed, frame id)``.

Mitsuba variant, in order: the ``variant`` argument; the ``TRITON_MITSUBA_VARIANT`` environment
variable; the first of ``cuda_ad_rgb`` (when an NVIDIA driver is present) and ``llvm_ad_rgb`` (when a
libLLVM >= 19 is installed) whose tiny probe render succeeds in a child process (checked once per
process, so a crash cannot take this process down); else ``scalar_rgb``. ``llvm_ad_rgb`` is about 2.5x
faster than ``scalar_rgb`` on CPU but Debian 12's default libLLVM-15 aborts inside drjit's JIT, hence
the probe. Only ``scalar_rgb`` was run when this module was written. The variant changes Monte Carlo
noise, so images are reproducible for a given variant only.

Example::

    from triton_s2r.tabletop.appearance import make_appearance
    from triton_s2r.tabletop.real import render_real
    from triton_s2r.render.primitives import builtin_frames

    scene, state = builtin_frames(4, width=128, height=128)
    images = render_real(scene, state, appearance=make_appearance(scene, seed=0), spp=32, seed=0)
"""

from __future__ import annotations

import functools
import glob
import math
import os
import re
import shutil
import subprocess
import sys
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import cv2
import numpy as np

from triton_s2r.render.camera import Camera
from triton_s2r.render.mesh import Mesh
from triton_s2r.render.scene import FrameState, Scene
from triton_s2r.tabletop.appearance import Appearance, Material
from triton_s2r.utils.optional import require

VARIANT_ENV = "TRITON_MITSUBA_VARIANT"
CUDA_VARIANT = "cuda_ad_rgb"
LLVM_VARIANT = "llvm_ad_rgb"
FALLBACK_VARIANT = "scalar_rgb"
#: Dihedral angle (degrees) above which an edge stays sharp; below it, normals are smoothed across it.
CREASE_ANGLE_DEG = 40.0

# A child process renders one tiny image with a JIT variant; exit code 0 means that variant works.
_PROBE = (
    "import sys, mitsuba as mi; mi.set_variant(sys.argv[1]); "
    "s = mi.load_dict({'type': 'scene', 'shape': {'type': 'sphere'}, 'light': {'type': 'constant'}, "
    "'sensor': {'type': 'perspective', 'film': {'type': 'hdrfilm', 'width': 4, 'height': 4}}}); "
    "mi.render(s, spp=1).numpy()"
)


# ------------------------------------------------------------------------------------------- variant


def select_variant(variant: str | None = None) -> str:
    """The Mitsuba variant to render with (see the module docstring for the order of choices)."""
    return variant or os.environ.get(VARIANT_ENV) or _auto_variant()


@functools.cache
def _auto_variant() -> str:
    """The first JIT variant whose probe render succeeds in a child process, else ``scalar_rgb``."""
    candidates = []
    if os.path.exists("/dev/nvidia0") or shutil.which("nvidia-smi"):
        candidates.append(CUDA_VARIANT)
    # Without libLLVM >= 19 drjit would load an older one and abort, so don't even probe.
    if os.environ.get("DRJIT_LIBLLVM_PATH") or _has_libllvm(min_major=19):
        candidates.append(LLVM_VARIANT)
    for name in candidates:
        try:
            probe = subprocess.run([sys.executable, "-c", _PROBE, name], capture_output=True, timeout=300, check=False)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if probe.returncode == 0:
            return name
    return FALLBACK_VARIANT


def _has_libllvm(min_major: int) -> bool:
    """Whether a shared libLLVM of at least ``min_major`` is installed in a standard library folder."""
    # Fixed folders, not a recursive glob: /usr/lib holds symlink loops that make ``**`` run forever.
    folders = ["/usr/lib", "/usr/lib64", "/usr/local/lib", "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
               *glob.glob("/usr/lib/llvm-*/lib"), "/opt/homebrew/opt/llvm/lib", "/usr/local/opt/llvm/lib"]
    for folder in folders:
        for path in glob.glob(os.path.join(folder, "libLLVM*")):
            match = re.search(r"libLLVM[-.](?:so\.)?(\d+)", os.path.basename(path))
            if match and int(match.group(1)) >= min_major:
                return True
    return False


def _mitsuba(variant: str | None) -> ModuleType:
    """Import Mitsuba and switch it to the selected variant."""
    mi = require("mitsuba", extra="scenes")
    name = select_variant(variant)
    if mi.variant() != name:
        mi.set_variant(name)
    return mi


# ---------------------------------------------------------------------------------------- lighting


@dataclass(frozen=True)
class FrameLighting:
    """Per-frame randomised lighting and camera effects (all drawn from ``(seed, frame id)``).

    Attributes:
        env_yaw_deg: rotation of the environment map about world z.
        env_strength: scale of the environment radiance.
        light_offset: (3,) key-light position relative to the scene centre, in units of the scene radius.
        light_size: side of the square key light, in units of the scene radius.
        light_irradiance: (3,) RGB irradiance the key light casts at the scene centre.
        exposure: linear gain before the tone curve.
        white_balance: (3,) per-channel gains (a slight colour cast), mean 1.
        vignetting: relative darkening at the image corners, in [0, 1).
        blur_sigma: Gaussian blur in pixels (lens and demosaicing softness).
        shot_noise: variance of the photon noise per unit of linear signal.
        read_noise: standard deviation of signal-independent sensor noise (linear units).
        render_seed: seed of Mitsuba's sampler.
    """

    env_yaw_deg: float
    env_strength: float
    light_offset: np.ndarray
    light_size: float
    light_irradiance: np.ndarray
    exposure: float
    white_balance: np.ndarray
    vignetting: float
    blur_sigma: float
    shot_noise: float
    read_noise: float
    render_seed: int


def frame_lighting(seed: int, frame_id: int) -> FrameLighting:
    """Draw the lighting and camera effects of one frame.

    Args:
        seed: the dataset seed.
        frame_id: the frame's identifier (any non-negative integer, e.g. its index in a split).
    """
    rng = np.random.default_rng([seed, frame_id, 0x5EA1])
    azimuth = rng.uniform(0, 2 * math.pi)
    radius, height = rng.uniform(0.2, 0.7), rng.uniform(1.3, 1.9)
    warmth = rng.uniform(-1, 1)  # warm (tungsten) to cool (daylight) key light
    tint = np.array([1 + 0.12 * warmth, 1.0, 1 - 0.15 * warmth])
    return FrameLighting(
        env_yaw_deg=float(rng.uniform(0, 360)),
        env_strength=float(rng.uniform(0.7, 1.2)),
        light_offset=np.array([radius * math.cos(azimuth), radius * math.sin(azimuth), height]),
        light_size=float(rng.uniform(0.3, 0.7)),
        light_irradiance=rng.uniform(2.5, 4.5) * tint / tint.mean(),
        exposure=float(rng.uniform(0.65, 0.85)),
        white_balance=(wb := rng.uniform(0.95, 1.05, 3)) / wb.mean(),
        vignetting=float(rng.uniform(0.15, 0.35)),
        blur_sigma=float(rng.uniform(0.35, 0.7)),
        shot_noise=float(rng.uniform(2e-4, 8e-4)),
        read_noise=float(rng.uniform(2e-3, 5e-3)),
        render_seed=int(rng.integers(0, 2**31 - 1)),
    )


def environment_map(seed: int, height: int = 64) -> np.ndarray:
    """A procedural lat-long room: bright ceiling, beige walls, dark floor, a few windows and lamps.

    Args:
        seed: the dataset seed (the room stays the same across frames; only its rotation is jittered).
        height: rows of the map; it is twice as wide.

    Returns:
        (height, 2 * height, 3) float32 linear radiance; row 0 looks straight up, row ``height - 1`` down,
        columns sweep the azimuth (Mitsuba's ``envmap`` layout).
    """
    rng = np.random.default_rng([seed, 0xE7])
    width = 2 * height
    elevation = (0.5 - (np.arange(height) + 0.5) / height)[:, None] * math.pi  # +pi/2 at the top row
    azimuth = ((np.arange(width) + 0.5) / width)[None, :] * 2 * math.pi
    ceiling = rng.uniform(0.7, 1.0) * np.array([1.0, 0.97, 0.9])
    wall = rng.uniform(0.3, 0.5) * np.array([1.0, 0.93, 0.82]) * rng.uniform(0.9, 1.1, 3)
    floor = rng.uniform(0.08, 0.15) * np.array([1.0, 0.85, 0.7])
    up = np.clip(np.sin(elevation), 0, 1)[..., None]
    env = np.where(elevation[..., None] >= 0, wall + (ceiling - wall) * up**2, floor + 0 * up)
    env = np.broadcast_to(env, (height, width, 3)).copy()
    # Wall brightness varies around the room (a window side and a dark corner).
    env *= (1 + 0.25 * np.cos(azimuth - rng.uniform(0, 2 * math.pi)))[..., None]
    for _ in range(int(rng.integers(1, 4))):  # windows: bright, slightly blue rectangles on the walls
        centre, half_width = rng.uniform(0, 2 * math.pi), rng.uniform(0.15, 0.4)
        low, high = rng.uniform(0.0, 0.2), rng.uniform(0.45, 0.8)
        d_az = np.abs((azimuth - centre + math.pi) % (2 * math.pi) - math.pi)
        window = (d_az < half_width) & (elevation > low) & (elevation < high)
        env[np.broadcast_to(window, (height, width))] = rng.uniform(3, 6) * np.array([0.85, 0.95, 1.1])
    for _ in range(int(rng.integers(1, 3))):  # ceiling lamps
        az, el = rng.uniform(0, 2 * math.pi), rng.uniform(0.9, 1.4)
        d_az = np.abs((azimuth - az + math.pi) % (2 * math.pi) - math.pi) * np.cos(el)
        env += rng.uniform(10, 20) * np.exp(-(d_az**2 + (elevation - el) ** 2) / (2 * 0.06**2))[..., None] * np.array(
            [1.0, 0.9, 0.75])
    return env.astype(np.float32)


# ------------------------------------------------------------------------------------------- meshes


@dataclass(frozen=True)
class RenderMesh:
    """A mesh with one index list (corners split where positions, UVs or normals differ), object frame.

    Attributes:
        positions: (V, 3) float64 vertex positions.
        normals: (V, 3) float64 unit shading normals (smooth within ``CREASE_ANGLE_DEG``, sharp across).
        texcoords: (V, 2) float32 in Mitsuba's convention ``(u, 1 - v)``: its ``bitmap`` reads row 0 at
            texcoord v = 0, while our UVs (and OBJ) put v = 0 at the bottom row.
        faces: (F, 3) uint32 vertex indices.
    """

    positions: np.ndarray
    normals: np.ndarray
    texcoords: np.ndarray
    faces: np.ndarray


_RENDER_MESHES: dict[int, tuple[weakref.ref, RenderMesh]] = {}


def render_mesh(mesh: Mesh, crease_angle_deg: float = CREASE_ANGLE_DEG) -> RenderMesh:
    """Convert a ``Mesh`` (separate position and UV indices) into a single-index mesh with normals.

    Results are cached per ``Mesh`` object, so a robot's 100k triangles are split once per process.
    """
    key = id(mesh)
    cached = _RENDER_MESHES.get(key)
    if cached is not None and cached[0]() is mesh:
        return cached[1]
    pos = mesh.v_pos.detach().cpu().numpy().astype(np.float64)
    uv = mesh.v_uv.detach().cpu().numpy().astype(np.float32)
    t_pos, t_uv = mesh.t_pos_idx.cpu().numpy(), mesh.t_uv_idx.cpu().numpy()
    corner_normals = _corner_normals(pos, t_pos, math.cos(math.radians(crease_angle_deg)))
    # A vertex of the output is a distinct (position, uv, normal) triple; normals compared at 1e-4.
    keys = np.concatenate([t_pos.reshape(-1, 1), t_uv.reshape(-1, 1),
                           np.round(corner_normals * 1e4).astype(np.int64)], axis=1)
    _, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    result = RenderMesh(
        positions=pos[t_pos.reshape(-1)[first]],
        normals=corner_normals[first],
        texcoords=np.stack([uv[t_uv.reshape(-1)[first], 0], 1 - uv[t_uv.reshape(-1)[first], 1]], -1),
        faces=inverse.reshape(-1, 3).astype(np.uint32),
    )
    _RENDER_MESHES[key] = (weakref.ref(mesh, lambda _, k=key: _RENDER_MESHES.pop(k, None)), result)
    return result


def _corner_normals(pos: np.ndarray, faces: np.ndarray, cos_crease: float) -> np.ndarray:
    """(3F, 3) unit normal per triangle corner: area-weighted mean of the normals of the triangles that
    share the corner's vertex and lie within the crease angle of the corner's own triangle."""
    face_n = np.cross(pos[faces[:, 1]] - pos[faces[:, 0]], pos[faces[:, 2]] - pos[faces[:, 0]])  # 2 x area
    unit = face_n / np.maximum(np.linalg.norm(face_n, axis=1, keepdims=True), 1e-20)
    corner_vertex = faces.reshape(-1)
    corner_face = np.repeat(np.arange(len(faces)), 3)
    order = np.argsort(corner_vertex, kind="stable")
    sorted_vertex = corner_vertex[order]
    starts = np.flatnonzero(np.r_[True, sorted_vertex[1:] != sorted_vertex[:-1]])
    sizes = np.diff(np.r_[starts, len(order)])
    # All ordered pairs of corners around each vertex: (a, b) with a, b positions in the sorted order.
    group = np.repeat(np.arange(len(starts)), sizes)
    count = sizes[group]
    a = np.repeat(np.arange(len(order)), count)
    b = starts[group][a] + (np.arange(count.sum()) - np.repeat(np.cumsum(count) - count, count))
    fa, fb = corner_face[order[a]], corner_face[order[b]]
    keep = np.einsum("ij,ij->i", unit[fa], unit[fb]) > cos_crease
    summed = np.stack([np.bincount(a, weights=face_n[fb, k] * keep, minlength=len(order)) for k in range(3)], -1)
    # Corners of degenerate triangles (sphere poles) match nothing: give them the plain vertex average.
    plain = np.stack([np.bincount(a, weights=face_n[fb, k], minlength=len(order)) for k in range(3)], -1)
    norm = np.linalg.norm(summed, axis=1, keepdims=True)
    summed = np.where(norm > 1e-20, summed, plain)
    norm = np.linalg.norm(summed, axis=1, keepdims=True)
    summed = np.where(norm > 1e-20, summed / np.maximum(norm, 1e-20), np.array([0.0, 0.0, 1.0]))
    out = np.empty_like(summed)
    out[order] = summed
    return out


def _mitsuba_mesh(mi: ModuleType, name: str, mesh: RenderMesh, world_from_object: np.ndarray, bsdf: Any) -> Any:
    """A ``mi.Mesh`` with the vertices posed in world space (normals by the inverse transpose)."""
    linear, shift = world_from_object[:3, :3], world_from_object[:3, 3]
    positions = mesh.positions @ linear.T + shift
    normals = mesh.normals @ np.linalg.inv(linear)
    normals /= np.maximum(np.linalg.norm(normals, axis=1, keepdims=True), 1e-20)
    props = mi.Properties()
    props["bsdf"] = bsdf
    out = mi.Mesh(name, len(positions), len(mesh.faces), props, has_vertex_normals=True, has_vertex_texcoords=True)
    params = mi.traverse(out)
    floats, ints = type(params["vertex_positions"]), type(params["faces"])
    params["vertex_positions"] = floats(positions.astype(np.float32).ravel())
    params["vertex_normals"] = floats(normals.astype(np.float32).ravel())
    params["vertex_texcoords"] = floats(mesh.texcoords.ravel())
    params["faces"] = ints(mesh.faces.ravel())
    params.update()
    return out


# ----------------------------------------------------------------------------------- scene pieces


def srgb_to_linear(x: np.ndarray) -> np.ndarray:
    """sRGB-encoded values in [0, 1] to linear reflectance."""
    return np.where(x <= 0.04045, x / 12.92, ((x + 0.055) / 1.055) ** 2.4).astype(np.float32)


def linear_to_srgb(x: np.ndarray) -> np.ndarray:
    """Linear values in [0, 1] to sRGB encoding."""
    x = np.clip(x, 0.0, 1.0)
    return np.where(x <= 0.0031308, 12.92 * x, 1.055 * np.power(x, 1 / 2.4) - 0.055).astype(np.float32)


def _bsdf(mi: ModuleType, material: Material) -> Any:
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


def _sensor(mi: ModuleType, camera: Camera, index: int, sampler: dict) -> dict:
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


def _world_bounds(scene: Scene, state: FrameState, index: int) -> tuple[np.ndarray, float]:
    """Centre (3,) and radius of the bounding box of frame ``index``'s posed objects."""
    lo, hi = np.full(3, np.inf), np.full(3, -np.inf)
    poses = state.object_poses[index].detach().cpu().numpy().astype(np.float64)
    for obj, pose in zip(scene.objects, poses, strict=True):
        corners = _box_corners(obj.mesh) @ pose[:3, :3].T + pose[:3, 3]
        lo, hi = np.minimum(lo, corners.min(0)), np.maximum(hi, corners.max(0))
    return (lo + hi) / 2, float(np.linalg.norm(hi - lo) / 2)


def _box_corners(mesh: Mesh) -> np.ndarray:
    """(8, 3) corners of a mesh's object-frame bounding box."""
    lo, hi = mesh.v_pos.min(0).values.double().numpy(), mesh.v_pos.max(0).values.double().numpy()
    return np.array([[(lo, hi)[i][0], (lo, hi)[j][1], (lo, hi)[k][2]] for i in (0, 1) for j in (0, 1) for k in (0, 1)])


def _lights(mi: ModuleType, env: np.ndarray, lighting: FrameLighting, centre: np.ndarray, radius: float) -> dict:
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


# ---------------------------------------------------------------------------------------- rendering


def render_real(
    scene: Scene,
    state: FrameState,
    *,
    appearance: Appearance,
    spp: int = 64,
    seed: int = 0,
    variant: str | None = None,
    frame_ids: Sequence[int] | None = None,
    max_depth: int = 6,
) -> np.ndarray:
    """Path trace the "real" image of every frame of ``state``.

    Args:
        scene: the scene (object meshes in their own frames, labels).
        state: B frames of object poses and cameras (square pixels).
        appearance: hidden materials per label (``make_appearance``).
        spp: samples per pixel (32 is clean enough at 128x128, 64 at 256x256).
        seed: dataset seed; with ``frame_ids`` it fixes lighting, camera effects and Monte Carlo noise.
        variant: Mitsuba variant; None selects one (see the module docstring).
        frame_ids: (B,) identifiers of the frames, so a frame renders identically alone or in a batch;
            default ``0..B-1``.
        max_depth: longest light path (Mitsuba ``path`` integrator).

    Returns:
        (B, H, W, 3) uint8 sRGB images; row 0 is the top of the image, as in the UVL frames.
    """
    mi = _mitsuba(variant)
    frame_ids = list(range(state.batch_size)) if frame_ids is None else [int(f) for f in frame_ids]
    if len(frame_ids) != state.batch_size:
        raise ValueError(f"{len(frame_ids)} frame ids for {state.batch_size} frames")
    missing = {o.label for o in scene.objects} - set(appearance.materials)
    if missing:
        raise ValueError(f"appearance has no material for label ids {sorted(missing)}; "
                         "make it with make_appearance(scene, ...) for this scene")
    bsdfs = {label: _bsdf(mi, appearance.material(label)) for label in {o.label for o in scene.objects}}
    env = environment_map(seed)
    images = []
    for index, frame_id in enumerate(frame_ids):
        lighting = frame_lighting(seed, frame_id)
        centre, radius = _world_bounds(scene, state, index)
        sampler = {"type": "independent", "sample_count": spp}
        mi_scene = mi.load_dict({
            "type": "scene",
            "integrator": {"type": "path", "max_depth": max_depth},
            "sensor": _sensor(mi, state.camera, index, sampler),
            **_lights(mi, env, lighting, centre, radius),
            **_posed_shapes(mi, scene, state, index, bsdfs),
        })
        radiance = np.array(mi.render(mi_scene, seed=lighting.render_seed), dtype=np.float32)[..., :3]
        images.append(develop(radiance, lighting, state.camera.intrinsics[index].tolist(),
                              np.random.default_rng([seed, frame_id, 0xCA3])))
    return np.stack(images)


def _posed_shapes(mi: ModuleType, scene: Scene, state: FrameState, index: int, bsdfs: dict[int, Any]) -> dict:
    """``load_dict`` entries of every object posed for frame ``index``."""
    poses = state.object_poses[index].detach().cpu().numpy().astype(np.float64)
    return {f"object_{i:03d}": _mitsuba_mesh(mi, obj.name, render_mesh(obj.mesh), pose, bsdfs[obj.label])
            for i, (obj, pose) in enumerate(zip(scene.objects, poses, strict=True))}


def develop(radiance: np.ndarray, lighting: FrameLighting, intrinsics: Sequence[float],
            rng: np.random.Generator) -> np.ndarray:
    """Turn linear radiance into an 8-bit photo: exposure, white balance, vignetting, blur, noise, tone curve.

    Args:
        radiance: (H, W, 3) float32 linear radiance from the path tracer.
        lighting: the frame's camera-effect parameters.
        intrinsics: ``[fx, fy, cx, cy]``; vignetting is centred on the principal point.
        rng: generator of the sensor noise.

    Returns:
        (H, W, 3) uint8 sRGB.
    """
    h, w = radiance.shape[:2]
    image = radiance * (lighting.exposure * lighting.white_balance).astype(np.float32)
    _, _, cx, cy = intrinsics
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    r2 = ((x - cx) ** 2 + (y - cy) ** 2) / ((w / 2) ** 2 + (h / 2) ** 2)
    image *= (1 - lighting.vignetting * r2)[..., None]
    image = cv2.GaussianBlur(image, (0, 0), lighting.blur_sigma)
    # Photon (shot) noise grows with the signal; read noise does not.
    sigma = np.sqrt(lighting.shot_noise * np.maximum(image, 0) + lighting.read_noise**2)
    image = image + sigma * rng.standard_normal(image.shape).astype(np.float32)
    # Highlights roll off smoothly above 0.8 instead of clipping hard (a film-like shoulder).
    knee = 0.8
    image = np.where(image < knee, image, 1 - (1 - knee) * np.exp(-(image - knee) / (1 - knee)))
    return np.round(linear_to_srgb(image) * 255).astype(np.uint8)


def render_depth(scene: Scene, state: FrameState, *, variant: str | None = None) -> np.ndarray:
    """Camera-frame depth of the visible surface at each pixel centre, traced by Mitsuba.

    Rays go exactly through pixel centres (one unjittered stratified sample), so this is directly
    comparable with the UVL rasterizer's ``GBuffer.depth``: it checks that real frames are pixel-aligned.

    Returns:
        (B, H, W) float32 depth (camera Z, as ``GBuffer.depth``), 0 where no surface is hit.
    """
    mi = _mitsuba(variant)
    black = mi.load_dict({"type": "diffuse", "reflectance": 0.0})
    camera = state.camera
    out = []
    for index in range(state.batch_size):
        sampler = {"type": "stratified", "sample_count": 1, "jitter": False}
        mi_scene = mi.load_dict({
            "type": "scene",
            "integrator": {"type": "aov", "aovs": "depth:depth"},
            "sensor": _sensor(mi, camera, index, sampler),
            **_posed_shapes(mi, scene, state, index, {o.label: black for o in scene.objects}),
        })
        # The AOV is the ray distance from the near plane: Z = near + t * cos(angle to the optical axis).
        t = np.array(mi.render(mi_scene), dtype=np.float32)[..., -1]
        cos_axis = 1 / np.linalg.norm(_camera_rays(camera, index), axis=-1)
        out.append(np.where(t > 0, camera.near + t * cos_axis, 0.0).astype(np.float32))
    return np.stack(out)


def _camera_rays(camera: Camera, index: int) -> np.ndarray:
    """(H, W, 3) camera-frame ray directions through pixel centres, with Z = 1."""
    fx, fy, cx, cy = (float(v) for v in camera.intrinsics[index])
    y, x = np.mgrid[0:camera.height, 0:camera.width].astype(np.float64)
    return np.stack([(x - cx) / fx, (y - cy) / fy, np.ones_like(x)], -1)
