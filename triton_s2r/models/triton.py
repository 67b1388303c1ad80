"""The TRITON translator as one module: texture, sim input x_a, and the two style-free auto-encoders.

Shared by training (``TritonSystem``) and inference (``Translator``), so both build x_a the same way.
Paper: §3.1 (texture and projection), §3.2 (translator); docs/method.md §2.5 and §3.1.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from triton_s2r.models.generator import StyleFreeGenerator
from triton_s2r.models.sim_input import SimInput, texture_projection
from triton_s2r.models.texture_space import sample_label_textures


@dataclass(frozen=True)
class SimBatch:
    """What the model needs from a G-buffer batch.

    Attributes:
        uv: (B, 2, H, W) float32 in [0, 1].
        label: (B, H, W) int64, 0 = void.
        texture: (B, C, H, W) texture sampled for this batch (antialiased if supersampled), in [0, 1].
    """

    uv: Tensor
    label: Tensor
    texture: Tensor


class TritonModel(nn.Module):
    """Texture + sim input + sim->real and real->sim auto-encoders.

    Args:
        texture: a ``NeuralTexture`` (or ``RasterTexture``): ``(uv, label) -> (B, C, H, W)`` in [0, 1].
        sim_input: builds x_a from texture, uv and label (multipliers give the ablations).
        generator_sim: auto-encoder of the sim domain (E_A, G_A); ``in_channels = sim_input.out_channels``.
        generator_real: auto-encoder of the real domain (E_B, G_B); 3 channels.
    """

    def __init__(
        self,
        texture: nn.Module,
        sim_input: SimInput,
        generator_sim: StyleFreeGenerator,
        generator_real: StyleFreeGenerator,
    ) -> None:
        super().__init__()
        self.texture = texture
        self.sim_input = sim_input
        self.generator_sim = generator_sim
        self.generator_real = generator_real

    @property
    def num_labels(self) -> int:
        return self.sim_input.num_labels

    def sample_texture(self, uv: Tensor, label: Tensor, supersample: int = 1, baked: Tensor | None = None) -> SimBatch:
        """Evaluate the texture, antialiased by supersampling.

        Args:
            uv: (B, 2, kH, kW) G-buffer UVs rendered at ``supersample`` = k times the output size.
            label: (B, kH, kW) labels at the same resolution.
            supersample: k. The texture is evaluated at every subsample and average-pooled; the UVs and
                labels kept for x_a and the losses are each block's top-left subsample (never blended).
            baked: optional (K, C, R, R) raster of the texture (``texture.bake(R)``), sampled bilinearly
                instead of evaluating the texture at every pixel (inference: the texture is fixed).

        When x_a ignores the texture (``sim_input.texture_multiplier == 0``) it is not evaluated: zeros.

        Returns:
            The batch at output resolution.
        """
        if self.sim_input.texture_multiplier == 0:  # x_a ignores the texture (no_texture, oracle): skip it
            texture = uv.new_zeros(uv.shape[0], self.sim_input.texture_channels, *uv.shape[2:])
        elif baked is None:
            texture = self.texture(uv, label)
        else:
            texture = sample_label_textures(baked, uv, label)
        if supersample > 1:
            texture = F.avg_pool2d(texture.float(), supersample)
            uv, label = uv[..., ::supersample, ::supersample], label[..., ::supersample, ::supersample]
        return SimBatch(uv=uv, label=label, texture=texture)

    def sim_image(self, batch: SimBatch) -> tuple[Tensor, Tensor]:
        """x_a and the texture projection π of a batch.

        Returns:
            ``(x_a, projection)``: (B, 6 + C - 3, H, W) and (B, C, H, W) in [-1, 1] (zero on void).
        """
        return self.sim_input(batch.texture, batch.uv, batch.label), texture_projection(batch.texture, batch.label)

    def translate(self, x_a: Tensor) -> Tensor:
        """Sim -> real: x_ab = G_B(E_A(x_a)), (B, 6 + C - 3, H, W) -> (B, 3, H, W) in [-1, 1]."""
        return self.generator_real.decode(self.generator_sim.encode(x_a))

    def forward(self, uv: Tensor, label: Tensor, supersample: int = 1) -> Tensor:
        """Translate G-buffers to real-looking images: (B, 3, H, W) in [-1, 1]."""
        x_a, _ = self.sim_image(self.sample_texture(uv, label, supersample))
        return self.translate(x_a)


@torch.no_grad()
def to_unit(image: Tensor) -> Tensor:
    """[-1, 1] -> [0, 1], clamped (for previews and metrics)."""
    return ((image.float() + 1) / 2).clamp(0, 1)
