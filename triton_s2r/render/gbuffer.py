"""The G-buffer: what every render backend returns and every later stage consumes."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

VOID = 0
"""Label id of pixels that hit no surface: no texture there (π = 0, hint -1); ℓUC, ℓTR and masked metrics skip them."""


@dataclass(frozen=True)
class GBuffer:
    """Per-pixel surface coordinates of a batch of frames.

    Attributes:
        uv: (B, 2, H, W) float32 texture coordinates (channel 0 = u, 1 = v) in [0, 1]; 0 on void pixels.
        label: (B, H, W) int64 label ids, 0 = void (no surface), 1..K as in the scene's label table.
        depth: (B, H, W) float32 camera-frame Z of the surface, 0 on void pixels; None when unknown
            (G-buffers read from UVL image files).
        face_id: (B, H, W) int64 index of the visible triangle in ``Scene.merged()``, -1 on void
            pixels; None when unknown.
    """

    uv: Tensor
    label: Tensor
    depth: Tensor | None = None
    face_id: Tensor | None = None

    def __post_init__(self) -> None:
        b, c, h, w = self.uv.shape
        if c != 2 or self.label.shape != (b, h, w):
            raise ValueError(f"GBuffer: uv must be (B, 2, H, W) and label (B, H, W); got "
                             f"{tuple(self.uv.shape)} and {tuple(self.label.shape)}")
        for name in ("depth", "face_id"):
            t = getattr(self, name)
            if t is not None and t.shape != (b, h, w):
                raise ValueError(f"GBuffer: {name} must be (B, H, W) = {(b, h, w)}, got {tuple(t.shape)}")

    @property
    def mask(self) -> Tensor:
        """(B, H, W) bool, True where a surface was hit (label != void)."""
        return self.label != VOID

    @property
    def batch_size(self) -> int:
        """B, the number of frames."""
        return self.uv.shape[0]

    @property
    def height(self) -> int:
        """H, the image height in pixels."""
        return self.uv.shape[2]

    @property
    def width(self) -> int:
        """W, the image width in pixels."""
        return self.uv.shape[3]

    def to(self, device: torch.device | str) -> GBuffer:
        """This G-buffer with every tensor on ``device``."""
        return GBuffer(self.uv.to(device), self.label.to(device),
                       *(None if t is None else t.to(device) for t in (self.depth, self.face_id)))

    def __getitem__(self, index: int | slice) -> GBuffer:
        """Frames ``index`` of the batch (an int keeps a batch dimension of 1)."""
        index = slice(index, index + 1) if isinstance(index, int) else index
        return GBuffer(self.uv[index], self.label[index],
                       *(None if t is None else t[index] for t in (self.depth, self.face_id)))

    @staticmethod
    def cat(buffers: list[GBuffer]) -> GBuffer:
        """Concatenate along the batch dimension."""
        def join(name: str) -> Tensor | None:
            ts = [getattr(g, name) for g in buffers]
            return None if any(t is None for t in ts) else torch.cat(ts)

        return GBuffer(torch.cat([g.uv for g in buffers]), torch.cat([g.label for g in buffers]), join("depth"),
                       join("face_id"))
