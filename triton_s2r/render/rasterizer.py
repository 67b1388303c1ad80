"""One rasterizer contract, two backends, chosen by name.

Every backend has ``render(scene, state, supersample=1) -> GBuffer``: for B frames of
``FrameState``, the G-buffer at ``supersample`` times the camera resolution (``(B, 2, kH, kW)`` UVs),
sampled at pixel centres with the nearest surface winning, never antialiased. Later stages antialias
by evaluating textures at the supersampled resolution and average-pooling.

=============  ======  =================================================================
backend        device  implementation
=============  ======  =================================================================
``embree``     CPU     Embree ray casting (``embreex``), exact barycentric UVs
``nvdiffrast`` CUDA    nvdiffrast ``rasterize`` + ``interpolate`` (extra ``gpu``)
``auto``               ``nvdiffrast`` if CUDA is available and nvdiffrast imports, else ``embree``
=============  ======  =================================================================
"""

from __future__ import annotations

import importlib.util
from typing import Protocol

import torch

from triton_s2r.render.gbuffer import GBuffer
from triton_s2r.render.scene import FrameState, Scene

BACKENDS = ("auto", "embree", "nvdiffrast")


class UVLRasterizer(Protocol):
    """What every render backend provides."""

    name: str
    device: torch.device

    def render(self, scene: Scene, state: FrameState, supersample: int = 1) -> GBuffer:
        """G-buffer of the B frames of ``state``: (B, 2, kH, kW) UVs and (B, kH, kW) labels on ``device``.

        Args:
            scene: the meshes and labels, each object in its own frame.
            state: per frame, the object poses and the camera (H x W).
            supersample: k, the factor on the camera's resolution (see the module docstring).
        """
        ...


def nvdiffrast_available() -> bool:
    """True if CUDA is usable and the nvdiffrast package is installed."""
    return torch.cuda.is_available() and importlib.util.find_spec("nvdiffrast") is not None


def make_rasterizer(backend: str = "auto", device: torch.device | str | None = None) -> UVLRasterizer:
    """Build a render backend.

    Args:
        backend: ``"auto"``, ``"embree"`` or ``"nvdiffrast"``.
        device: CUDA device for ``nvdiffrast`` (default ``"cuda"``); ignored by ``embree``.

    Raises:
        ValueError: unknown backend name.
        RuntimeError: ``nvdiffrast`` asked for explicitly but CUDA is not available.
        ImportError: ``nvdiffrast`` asked for explicitly but not installed (names the extra).
    """
    if backend not in BACKENDS:
        raise ValueError(f"unknown render backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    if backend == "auto":
        backend = "nvdiffrast" if nvdiffrast_available() else "embree"
    if backend == "embree":
        from triton_s2r.render.embree import EmbreeRasterizer

        return EmbreeRasterizer()
    if not torch.cuda.is_available():
        raise RuntimeError(
            "render backend 'nvdiffrast' needs a CUDA GPU, and none is available; use 'embree' or 'auto'"
        )
    from triton_s2r.render.nvdiffrast import NvdiffrastRasterizer

    return NvdiffrastRasterizer(device or "cuda")
