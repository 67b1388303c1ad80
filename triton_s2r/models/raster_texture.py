"""Learnable raster textures: the "raster TRITON" ablation (docs/method.md §2.4; paper appendix §A.1).

The reference's ``type: raster`` texture is a free (C, R, R) tensor per label, initialised U(0, 1), with no
output activation, looked up with nearest texels. Here it is sampled bilinearly (``align_corners=False``
texel centres, border clamp; see ``texture_space.py``; rows = u, columns = v), so the texels around a
sample all receive gradient.

The paper reports raster TRITON to be unstable at high resolution because only the texels that are hit
get gradients. Optional mip levels address that: ``num_mip_levels`` rasters of sides R, R/2, R/4, ... are
each sampled bilinearly and summed, so coarse levels collect gradient from every pixel that falls in their
larger texels (a Laplacian-pyramid texture, as in Thies et al., "Deferred Neural Rendering", 2019).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from triton_s2r.models.texture_space import check_labels, sample_label_textures


class RasterTexture(nn.Module):
    """Per-label learnable raster texture, sampled bilinearly, with optional mip levels.

    Args:
        num_labels: K, number of object labels (void label 0 excluded).
        out_channels: C, texture channels; the first 3 are RGB.
        resolution: R, texels per side of the finest level.
        num_mip_levels: rasters summed at sides R, R/2, ..., R/2^(n-1); 1 = a plain raster (reference).
        seed: seeds the initialisation independently of the global RNG. The finest level starts
            U(0, 1) as in the reference; coarser levels start at 0, so the initial texture is the same
            for any number of levels.
    """

    def __init__(
        self,
        num_labels: int,
        out_channels: int = 3,
        resolution: int = 256,
        num_mip_levels: int = 1,
        seed: int = 0,
    ) -> None:
        super().__init__()
        if num_mip_levels < 1 or resolution % (2 ** (num_mip_levels - 1)) != 0:
            raise ValueError(
                f"resolution ({resolution}) must be divisible by 2^(num_mip_levels - 1) "
                f"(num_mip_levels={num_mip_levels}, which must be >= 1)"
            )
        self.num_labels = num_labels
        self.out_channels = out_channels
        self.resolution = resolution
        generator = torch.Generator().manual_seed(seed)
        levels = [torch.rand(num_labels, out_channels, resolution, resolution, generator=generator)]
        for level in range(1, num_mip_levels):
            side = resolution // 2**level
            levels.append(torch.zeros(num_labels, out_channels, side, side))
        self.levels = nn.ParameterList([nn.Parameter(level) for level in levels])

    def forward(self, uv: Tensor, label: Tensor) -> Tensor:
        """Sample every pixel's label texture at its UV.

        Args:
            uv: (B, 2, H, W) float; channel 0 = u, 1 = v, in [0, 1].
            label: (B, H, W) int64; 0 = void, 1..K = objects.

        Returns:
            (B, C, H, W) float; unbounded (about [0, 1] at initialisation); zeros at void pixels.
        """
        check_labels(label, self.num_labels, check_range=not label.is_cuda)
        out = sample_label_textures(self.levels[0], uv, label)
        for level in self.levels[1:]:
            out = out + sample_label_textures(level, uv, label)
        return out

    def bake(self, resolution: int | None = None) -> Tensor:
        """The summed texture as one raster per label.

        Args:
            resolution: side of the result; defaults to R. Other sizes resample bilinearly.

        Returns:
            (K, C, resolution, resolution); rows follow u, columns follow v.
        """
        resolution = self.resolution if resolution is None else resolution
        total = None
        for level in self.levels:
            # align_corners=False matches the texel-centre convention of ``sample_label_textures``.
            resized = nn.functional.interpolate(
                level, size=(resolution, resolution), mode="bilinear", align_corners=False
            )
            total = resized if total is None else total + resized
        assert total is not None  # __init__ makes at least one level
        return total

    def extra_repr(self) -> str:
        """Labels, channels, resolution and mip levels, for ``repr(module)``."""
        return (
            f"num_labels={self.num_labels}, out_channels={self.out_channels}, "
            f"resolution={self.resolution}, num_mip_levels={len(self.levels)}"
        )
