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
from triton_s2r.models.neural_texture import NeuralTexture
from triton_s2r.models.raster_texture import RasterTexture
from triton_s2r.models.shading import shade
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

    @staticmethod
    def cat(*batches: SimBatch) -> SimBatch:
        """The batches one after the other along the batch dimension (same H, W and C)."""
        return SimBatch(uv=torch.cat([b.uv for b in batches]), label=torch.cat([b.label for b in batches]),
                        texture=torch.cat([b.texture for b in batches]))


class TritonModel(nn.Module):
    """Texture + sim input + sim->real and real->sim auto-encoders.

    Args:
        texture: a ``NeuralTexture`` (or ``RasterTexture``): ``(uv, label) -> (B, C, H, W)`` in [0, 1].
        sim_input: builds x_a from texture, uv and label (multipliers give the ablations).
        generator_sim: auto-encoder of the sim domain (E_A, G_A); ``in_channels = sim_input.out_channels``.
        generator_real: auto-encoder of the real domain (E_B, G_B); 3 channels, plus ``shading_channels``
            extra decoder outputs.
        shading_channels: 0 (reference): x_ab is G_B's image. 1 (grey) or 3: x_ab shows the sampled texture
            times a gain that G_B draws on every surface pixel, and G_B's image on void pixels
            (``models.shading``, docs/method.md §3.3); ``draw_labels`` keeps G_B's image on chosen labels too.
        detach_texture_input: x_a reads the texture with its gradient stopped, so the texture learns only from
            the terms that see π (ℓTR), not as a code for the auto-encoders (docs/method.md §4.6). Always so
            with shading.
    """

    shaded_labels: Tensor  # (K + 1,) bool buffer, registered in __init__

    def __init__(
        self,
        texture: NeuralTexture | RasterTexture,
        sim_input: SimInput,
        generator_sim: StyleFreeGenerator,
        generator_real: StyleFreeGenerator,
        shading_channels: int = 0,
        detach_texture_input: bool = False,
    ) -> None:
        super().__init__()
        if shading_channels not in (0, 1, 3):
            raise ValueError(f"model.translator.shading_channels must be 0, 1 or 3, got {shading_channels}")
        if generator_real.extra_out_channels != shading_channels:
            raise ValueError(f"generator_real has {generator_real.extra_out_channels} extra output channels but "
                             f"shading_channels is {shading_channels}; set "
                             "model.translator.generator_real.extra_out_channels to the same value")
        if generator_sim.in_channels != sim_input.out_channels:
            raise ValueError(f"x_a has {sim_input.out_channels} channels but generator_sim takes "
                             f"{generator_sim.in_channels}; leave model.translator.generator_sim.in_channels and "
                             "model.discriminator_sim.in_channels at their default, which follows x_a "
                             f"({sim_input.out_channels}: 6 + texture channels - 3, + K labels with onehot labels)")
        if shading_channels and sim_input.texture_multiplier == 0:
            raise ValueError("model.translator.shading_channels > 0 shades the texture, but texture_multiplier "
                             "is 0 (no texture); set shading_channels=0")
        self.texture = texture
        self.sim_input = sim_input
        self.generator_sim = generator_sim
        self.generator_real = generator_real
        self.shading_channels = shading_channels
        self.detach_texture_input = detach_texture_input or shading_channels > 0
        # Per label id: x_ab shows the shaded texture there (never on void, 0).
        self.register_buffer("shaded_labels", self._all_surfaces_shaded())

    def _all_surfaces_shaded(self) -> Tensor:
        shaded = torch.full((self.num_labels + 1,), self.shading_channels > 0)
        shaded[0] = False
        return shaded

    def draw_labels(self, label_ids: Tensor) -> None:
        """With shading, keep G_B's image on the labels ``label_ids`` as on void: the decoder draws them itself.

        The texture of those labels then reaches x_ab only through x_a (docs/method.md §3.3). Saved with the
        model, so a translation shades what training shaded.

        Args:
            label_ids: (N,) int64 ids in 1..K.
        """
        ids = label_ids.to(self.shaded_labels.device).long()
        if not self.shading_channels:
            raise ValueError("draw_labels needs the shaded output (model.translator.shading_channels > 0): without "
                             "it G_B draws every label already")
        if not bool(((ids >= 1) & (ids <= self.num_labels)).all()):
            raise ValueError(f"label ids {ids.tolist()} outside 1..{self.num_labels}")
        self.shaded_labels[ids] = False

    def shaded(self, label: Tensor) -> Tensor:
        """(B, H, W) int64 labels -> (B, H, W) bool: the pixels where x_ab shows the shaded texture."""
        return self.shaded_labels[label]

    def _load_from_state_dict(self, state_dict: dict[str, Tensor], prefix: str, local_metadata: dict, strict: bool,
                              missing_keys: list[str], unexpected_keys: list[str], error_msgs: list[str]) -> None:
        # Runs saved before the buffer existed shaded every surface (when they shaded at all).
        state_dict.setdefault(prefix + "shaded_labels", self._all_surfaces_shaded())
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)

    @property
    def num_labels(self) -> int:
        """K, the number of object labels (void excluded)."""
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

        With ``detach_texture_input`` (always with shading) the texture is detached in x_a: it learns from what
        the translation shows, not as a code the encoder reads.

        Returns:
            ``(x_a, projection)``: (B, 6 + C - 3, H, W) and (B, C, H, W) in [-1, 1] (zero on void).
        """
        texture = batch.texture.detach() if self.detach_texture_input else batch.texture
        return self.sim_input(texture, batch.uv, batch.label), texture_projection(batch.texture, batch.label)

    def decode_real(self, content: Tensor, batch: SimBatch) -> tuple[Tensor, Tensor]:
        """x_ab from the content code c_a = E_A(x_a) of ``batch``.

        Without shading x_ab is G_B's image; with ``shading_channels`` > 0, G_B's image on void pixels (and the
        labels of ``draw_labels``) and the shaded texture on the other surfaces (``models.shading``).

        Returns:
            ``(x_ab, x_ab_fixed_texture)``: (B, 3, H, W) in [-1, 1], and the same image with the texture's
            gradient stopped (the same tensor without shading). Training gives the second to the cycle, content
            and ℓUC terms, so with shading the texture learns only from the adversarial, ℓTR and pairing terms
            (docs/method.md §4.6).
        """
        if not self.shading_channels:
            x_ab = self.generator_real.decode(content)
            return x_ab, x_ab
        image, shading = self.generator_real.decode_with_extra(content)
        texture, shaded = batch.texture[:, :3], self.shaded(batch.label)
        return shade(image, shading, texture, shaded), shade(image, shading, texture.detach(), shaded)

    def translate(self, x_a: Tensor, batch: SimBatch) -> Tensor:
        """Sim -> real: x_ab = G_B(E_A(x_a)) (``decode_real``), (B, 6 + C - 3, H, W) -> (B, 3, H, W) in [-1, 1]."""
        return self.decode_real(self.generator_sim.encode(x_a), batch)[0]

    def real_to_sim(self, real: Tensor) -> Tensor:
        """Real -> sim: x_ba = G_A(E_B(real)), (B, 3, H, W) in [-1, 1] -> (B, 6 + C - 3, H, W) like x_a."""
        return self.generator_sim.decode(self.generator_real.encode(real))

    def forward(self, uv: Tensor, label: Tensor, supersample: int = 1) -> Tensor:
        """Translate G-buffers to real-looking images: (B, 3, H, W) in [-1, 1]."""
        batch = self.sample_texture(uv, label, supersample)
        x_a, _ = self.sim_image(batch)
        return self.translate(x_a, batch)


@torch.no_grad()
def to_unit(image: Tensor) -> Tensor:
    """[-1, 1] -> [0, 1], clamped (for previews and metrics)."""
    return ((image.float() + 1) / 2).clamp(0, 1)
