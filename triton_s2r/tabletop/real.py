"""The benchmark's photoreal "real" domain: the UVL scene path traced with Mitsuba 3 and hidden appearance.

Every frame is rendered from exactly the geometry and camera the UVL rasterizer sees, so each sim frame has
a pixel-aligned real counterpart (the paired ``test`` split). What the model never sees: the procedural
textures of ``triton_s2r.tabletop.appearance``, a path tracer (``path``, depth 6) with a shadow-casting
rectangular key light and a procedural room environment map, glossy ``principled`` BSDFs, and a camera
model with blur, vignetting, sensor noise and a soft highlight roll-off. Lights, exposure, white balance
and noise are jittered per frame from ``(seed, frame id)``.

The pieces, one module each: ``mitsuba_variant`` (which Mitsuba variant runs: the ``variant`` argument,
``TRITON_MITSUBA_VARIANT``, else the fastest that renders here; images are reproducible for a given
variant only), ``lighting`` (per-frame lights and camera effects, the room environment map), ``render_mesh``
(single-index meshes with crease-angle normals), ``mitsuba_scene`` (the scene dictionary: posed meshes,
BSDFs, sensor, lights) and ``camera_effects`` (radiance to an 8-bit photo). This module puts them together.

Example::

    from triton_s2r.tabletop.appearance import make_appearance
    from triton_s2r.tabletop.real import render_real
    from triton_s2r.render.primitives import builtin_frames

    scene, state = builtin_frames(4, width=128, height=128)
    images = render_real(scene, state, appearance=make_appearance(scene, seed=0), spp=32, seed=0)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from triton_s2r.render.camera import Camera
from triton_s2r.render.scene import FrameState, Scene
from triton_s2r.tabletop.appearance import Appearance
from triton_s2r.tabletop.camera_effects import develop
from triton_s2r.tabletop.lighting import FrameLighting, environment_map, frame_lighting
from triton_s2r.tabletop.mitsuba_scene import (
    frame_lights,
    frame_parameters,
    frame_sensor,
    material_bsdf,
    object_corners,
    posed_instances,
    posed_shapes,
    shape_groups,
    world_bounds,
)
from triton_s2r.tabletop.mitsuba_variant import load_mitsuba


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
        variant: Mitsuba variant; None selects one (``mitsuba_variant.select_variant``).
        frame_ids: (B,) identifiers of the frames, so a frame renders identically alone or in a batch;
            default ``0..B-1``.
        max_depth: longest light path (Mitsuba ``path`` integrator).

    Returns:
        (B, H, W, 3) uint8 sRGB images; row 0 is the top of the image, as in the UVL frames.
    """
    renderer = RealRenderer(scene, appearance, spp=spp, seed=seed, variant=variant, max_depth=max_depth)
    return renderer.render(state, frame_ids)


class RealRenderer:
    """``render_real`` for many batches of one scene and appearance, making its Mitsuba scene once.

    Every object's mesh is made once in its own frame, with its BVH, as a Mitsuba shape group, placed at the frame's
    pose as an instance. The Mitsuba scene (groups, instances, sensor, lights) is loaded once, for the first frame;
    every later frame updates the camera, lights and instance poses in place (``mi.traverse``,
    ``mitsuba_scene.frame_parameters``), with the pixels of a scene loaded for that frame up to the float rounding
    of the lights (one grey level in about 0.001 % of the pixels, docs/benchmarks.md). A scene loaded per frame
    would make a JIT variant (``cuda_ad_rgb``, ``llvm_ad_rgb``) trace and compile its kernels anew each time.
    Instances intersect rays in the object's frame, so the float rounding of hit points differs from posed meshes
    and a few light paths take another turn: against posed meshes, 0.1-0.5 % of the pixels of a 128x128 frame change
    (mean change 0.002 grey levels), the Monte Carlo noise of the frame being several grey levels
    (docs/benchmarks.md). Images do not depend on the order or grouping of frames.

    Example::

        renderer = RealRenderer(scene, appearance, spp=32, seed=0)
        for chunk in chunks:
            images = renderer.render(state.select(chunk), frame_ids=chunk)
    """

    def __init__(self, scene: Scene, appearance: Appearance, *, spp: int = 64, seed: int = 0,
                 variant: str | None = None, max_depth: int = 6) -> None:
        """See ``render_real`` for the arguments."""
        missing = {o.label for o in scene.objects} - set(appearance.materials)
        if missing:
            raise ValueError(f"appearance has no material for label ids {sorted(missing)}; "
                             "make it with make_appearance(scene, ...) for this scene")
        self.mi = load_mitsuba(variant)
        self.scene, self.appearance, self.spp, self.seed, self.max_depth = scene, appearance, spp, seed, max_depth
        self._groups = self._make_groups()
        self._loaded: tuple[Any, Any, tuple[int, int]] | None = None  # (Mitsuba scene, its parameters, film size)
        self._env = environment_map(seed)
        self._corners = object_corners(scene)

    def render(self, state: FrameState, frame_ids: Sequence[int] | None = None) -> np.ndarray:
        """(B, H, W, 3) uint8 images of the frames of ``state`` (see ``render_real``)."""
        mi = self.mi
        frame_ids = list(range(state.batch_size)) if frame_ids is None else [int(f) for f in frame_ids]
        if len(frame_ids) != state.batch_size:
            raise ValueError(f"{len(frame_ids)} frame ids for {state.batch_size} frames")
        size = (state.camera.width, state.camera.height)
        if self._loaded is not None and self._loaded[2] != size:  # another film: a new scene, with new groups,
            self._loaded, self._groups = None, self._make_groups()  # since JIT variants crash on shared ones
        images = []
        for index, frame_id in enumerate(frame_ids):
            lighting = frame_lighting(self.seed, frame_id)
            entries = self._frame_entries(state, index, lighting)
            if self._loaded is None:
                self._load(entries, size, self._frame_entries(state, index, frame_lighting(self.seed, frame_id + 1)))
            mi_scene = self._update(entries)
            radiance = np.array(mi.render(mi_scene, seed=self._opaque(mi.UInt32, lighting.render_seed)),
                                dtype=np.float32)[..., :3]
            images.append(develop(radiance, lighting, state.camera.intrinsics[index].tolist(),
                                  np.random.default_rng([self.seed, frame_id, 0xCA3])))
        return np.stack(images)

    def _make_groups(self) -> dict[str, Any]:
        """Every object's mesh in its own frame with its BSDF, as Mitsuba shape groups (``shape_groups``)."""
        labels = {o.label for o in self.scene.objects}
        return shape_groups(self.mi, self.scene, {label: material_bsdf(self.mi, self.appearance.material(label))
                                                  for label in labels})

    def _frame_entries(self, state: FrameState, index: int, lighting: FrameLighting) -> dict[str, Any]:
        """The ``mi.load_dict`` entries that change between frames: sensor, lights and the objects' instances."""
        centre, radius = world_bounds(self._corners, state, index)
        return {"sensor": frame_sensor(self.mi, state.camera, index, {"type": "independent", "sample_count": self.spp}),
                **frame_lights(self.mi, self._env, lighting, centre, radius),
                **posed_instances(self.mi, self._groups, state, index)}

    def _load(self, entries: dict[str, Any], size: tuple[int, int], other: dict[str, Any]) -> None:
        """Load the Mitsuba scene of ``entries``, then update it to the frame ``other`` (other lights).

        Mitsuba's lights come out of an update with other float rounding than out of loading (up to about 1e-5 of
        the radiance, enough to flip a few 8-bit pixels), so every frame, the loaded one included, is rendered
        after an update: a frame's pixels then do not depend on which frame was loaded.
        """
        scene = self.mi.load_dict({"type": "scene", "integrator": {"type": "path", "max_depth": self.max_depth},
                                   **self._groups, **entries})
        self._loaded = (scene, self.mi.traverse(scene), size)
        self._update(other)

    def _update(self, entries: dict[str, Any]) -> Any:
        """The loaded scene, its camera, lights and object poses set to those of ``entries``."""
        assert self._loaded is not None
        scene, parameters, _ = self._loaded
        for key, value in frame_parameters(entries).items():
            parameters[key] = self._opaque(type(parameters[key]), value)  # scalar values to the variant's types
        parameters.update()
        return scene

    def _opaque(self, kind: type, value: Any) -> Any:
        """``value`` as the variant's ``kind``, opaque in a JIT variant.

        Opaque values enter a frame's kernels as inputs rather than as compiled-in constants, so later frames can
        reuse those kernels.
        """
        import drjit as dr

        converted = kind(value)
        if dr.is_jit_v(self.mi.Float):
            dr.make_opaque(converted)
        return converted


def render_depth(scene: Scene, state: FrameState, *, variant: str | None = None) -> np.ndarray:
    """Camera-frame depth of the visible surface at each pixel centre, traced by Mitsuba.

    Rays go exactly through pixel centres (one unjittered stratified sample), so this is directly
    comparable with the UVL rasterizer's ``GBuffer.depth``: it checks that real frames are pixel-aligned.

    Returns:
        (B, H, W) float32 depth (camera Z, as ``GBuffer.depth``), 0 where no surface is hit.
    """
    mi = load_mitsuba(variant)
    black = mi.load_dict({"type": "diffuse", "reflectance": 0.0})
    camera = state.camera
    out = []
    for index in range(state.batch_size):
        sampler = {"type": "stratified", "sample_count": 1, "jitter": False}
        mi_scene = mi.load_dict({
            "type": "scene",
            "integrator": {"type": "aov", "aovs": "depth:depth"},
            "sensor": frame_sensor(mi, camera, index, sampler),
            **posed_shapes(mi, scene, state, index, {o.label: black for o in scene.objects}),
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
