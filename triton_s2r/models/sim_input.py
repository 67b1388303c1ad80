"""The simulated-domain network input x_a: texture projection plus UVL hint (docs/method.md §2.5).

With π the sampled texture mapped to [-1, 1] and ``hint = 2·uvl - 1``, the reference builds

    x_a = [hint·m_h + π_rgb·m_t,  hint]                      (6 channels)

so the "no texture" ablation (pure MUNIT) is ``texture_multiplier = 0`` and the "texture only" ablation
is ``hint_multiplier = 0``. Textures with C > 3 channels append their extra channels, times m_t, after the
hint (6 + C - 3 channels in all). Void pixels (label 0) have π = 0 and uv = 0, so their hint is -1.
With ``label_encoding="onehot"`` K more channels follow, one per label (1 on its pixels, -1 elsewhere), so
that each label is a category of its own for the networks rather than a step of 2/K on one channel.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from triton_s2r.conf import sim_channels


def uvl_image(uv: Tensor, label: Tensor, num_labels: int) -> Tensor:
    """The 3-channel UVL image fed to networks (docs/method.md §1.1).

    Args:
        uv: (B, 2, H, W) float; u, v in [0, 1] (clamped); ignored at void pixels.
        label: (B, H, W) int64; 0 = void, 1..K = objects.
        num_labels: K.

    Returns:
        (B, 3, H, W) float32 in [0, 1]: (u, v, label / K), all zero at void pixels.
    """
    solid = (label > 0).unsqueeze(1).float()
    uv = uv.float().clamp(0.0, 1.0) * solid
    return torch.cat([uv, label.unsqueeze(1).float() / num_labels], dim=1)


def uvl_hint(uv: Tensor, label: Tensor, num_labels: int) -> Tensor:
    """The UVL hint ``2·uvl - 1``.

    Args:
        uv: (B, 2, H, W) float; u, v in [0, 1].
        label: (B, H, W) int64; 0 = void, 1..K = objects.
        num_labels: K.

    Returns:
        (B, 3, H, W) float32 in [-1, 1]; (-1, -1, -1) at void pixels.
    """
    return 2.0 * uvl_image(uv, label, num_labels) - 1.0


def hint_labels(x_a: Tensor, num_labels: int) -> Tensor:
    """The labels a sim-domain image draws in its hint's label channel (channel 5 of x_a), rounded to ids.

    The inverse of ``uvl_hint``'s label channel (``2·label/K - 1`` on surfaces, -1 on void), for images the
    real->sim translator draws from photos: how it labels the real frames' surfaces.

    Args:
        x_a: (B, 6 + C - 3, H, W) float, as ``SimInput`` builds it or ``TritonModel.real_to_sim`` draws it.
        num_labels: K.

    Returns:
        (B, H, W) int64 in 0..K (values beyond the range are clamped to it).
    """
    return ((x_a[:, 5].float() + 1) / 2 * num_labels).round().clamp(0, num_labels).long()


def texture_projection(texture: Tensor, label: Tensor) -> Tensor:
    """The texture projection π: the sampled texture mapped from [0, 1] to [-1, 1].

    Args:
        texture: (B, C, H, W) sampled texture, about [0, 1] (see ``NeuralTexture.forward``).
        label: (B, H, W) int64; 0 = void.

    Returns:
        (B, C, H, W) in [-1, 1]; zero at void pixels (no surface, so no texture).
    """
    return (2.0 * texture - 1.0) * (label > 0).unsqueeze(1).to(texture.dtype)


LABEL_ENCODINGS = ("scalar", "onehot")


class SimInput(nn.Module):
    """Builds x_a from a sampled texture and the G-buffer's uv and label (no parameters).

    Args:
        num_labels: K, number of object labels (void excluded); scales the label channel.
        texture_channels: C of the texture; x_a has ``6 + C - 3`` channels.
        texture_multiplier: m_t, scales π; 0 gives the "no texture" (pure MUNIT) ablation. Reference: 1.
        hint_multiplier: m_h, scales the hint added to π; 0 gives the "texture only" ablation.
            Reference: 1 (0 at the end of the paper's run, docs/method.md §5.7).
        label_encoding: "scalar" (reference): the label reaches the networks only as the hint's ``label / K``
            channel; "onehot": also as K channels, one per label, after everything else (docs/method.md §2.5).
        uv_hint: True (reference): the hint holds u and v; False: its u and v channels are -1 everywhere, so the
            networks see where a pixel lies on its surface only through the texture (the label stays); the
            package's config sets False, the texture-less experiments True. Runs saved without the key load as True.
        label_hint: True (reference): the hint's third channel is ``2·label/K - 1`` (or the shared value of
            ``share_label_hint``); False: 1 on every surface (-1 on void), so the networks tell the objects apart
            only by their textures (and, with "onehot", the label channels). Runs saved without the key load as True.

    Buffers:
        hint_label_values: (K + 1,) float32, the hint's label channel for each id (void -1, label l ``2·l/K - 1``
            until ``share_label_hint``); saved with the weights, and runs saved without it load these values.
    """

    hint_label_values: Tensor

    def __init__(
        self,
        num_labels: int,
        texture_channels: int = 3,
        texture_multiplier: float = 1.0,
        hint_multiplier: float = 1.0,
        label_encoding: str = "scalar",
        uv_hint: bool = True,
        label_hint: bool = True,
    ) -> None:
        super().__init__()
        if texture_channels < 3:
            raise ValueError(f"texture_channels must be >= 3 (RGB first), got {texture_channels}")
        if label_encoding not in LABEL_ENCODINGS:
            raise ValueError(f"model.translator.sim_input.label_encoding must be one of {LABEL_ENCODINGS}, "
                             f"got {label_encoding!r}")
        self.label_encoding = label_encoding
        self.num_labels = num_labels
        self.texture_channels = texture_channels
        self.texture_multiplier = texture_multiplier
        self.hint_multiplier = hint_multiplier
        self.uv_hint = uv_hint
        self.label_hint = label_hint
        self.register_buffer("hint_label_values", self._id_hint_values())

    def _id_hint_values(self) -> Tensor:
        return 2.0 * (torch.arange(self.num_labels + 1, dtype=torch.float32) / self.num_labels) - 1.0

    def share_label_hint(self, label_ids: Tensor) -> None:
        """Give the labels ``label_ids`` one value in the hint's label channel: the mean of their own.

        With the moving objects' labels, the hint still marks a pixel as an object's, apart from the table and
        the robot, but no longer which object: only the objects' textures (and shapes) tell them apart
        (``system.shared_object_hint``, docs/method.md §2.5). The real->sim translator's label decoding then
        names every object by the id nearest that value.

        Args:
            label_ids: (N,) int64 ids in 1..K.
        """
        ids = label_ids.to(self.hint_label_values.device).long()
        if not bool(((ids >= 1) & (ids <= self.num_labels)).all()):
            raise ValueError(f"label ids {ids.tolist()} outside 1..{self.num_labels}")
        values = self._id_hint_values().to(self.hint_label_values.device)
        if ids.numel():
            values[ids] = values[ids].mean()
        self.hint_label_values.copy_(values)

    def _load_from_state_dict(self, state_dict: dict[str, Tensor], prefix: str, local_metadata: dict, strict: bool,
                              missing_keys: list[str], unexpected_keys: list[str], error_msgs: list[str]) -> None:
        # Runs saved before the buffer existed hint every label by its own id.
        state_dict.setdefault(prefix + "hint_label_values", self._id_hint_values())
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)

    @property
    def out_channels(self) -> int:
        """Channels of x_a: 3 (hint + texture) + 3 (hint) + extra texture channels (+ K one-hot label channels)."""
        return sim_channels(self.texture_channels, self.num_labels, self.label_encoding)

    def decode_labels(self, x_a: Tensor) -> Tensor:
        """The labels an x_a-like image draws (e.g. the real->sim translator's, from a photo), as ids.

        "scalar": the hint's label channel rounded (``hint_labels``); "onehot": the strongest label channel,
        void where none is above 0.

        Args:
            x_a: (B, out_channels, H, W) float.

        Returns:
            (B, H, W) int64 in 0..K.
        """
        if self.label_encoding == "scalar":
            return hint_labels(x_a, self.num_labels)
        scores, index = x_a[:, -self.num_labels:].float().max(dim=1)
        return torch.where(scores > 0, index + 1, 0)

    def forward(self, texture: Tensor, uv: Tensor, label: Tensor) -> Tensor:
        """Build x_a.

        Args:
            texture: (B, C, H, W) sampled texture in about [0, 1], zero at void pixels.
            uv: (B, 2, H, W) float; u, v in [0, 1].
            label: (B, H, W) int64; 0 = void, 1..K = objects.

        Returns:
            (B, out_channels, H, W) float32: channels 0-2 ``hint·m_h + π[:3]·m_t`` (range
            [-(m_h + m_t), m_h + m_t]), 3-5 the hint in [-1, 1], then ``π[3:]·m_t``, then with "onehot" one
            channel per label 1..K, 1 on its pixels and -1 elsewhere.
        """
        if texture.shape[1] != self.texture_channels:
            raise ValueError(f"expected a {self.texture_channels}-channel texture, got {texture.shape[1]}")
        hint = uvl_hint(uv, label, self.num_labels)
        if not self.uv_hint:
            hint = torch.cat([torch.full_like(hint[:, :2], -1.0), hint[:, 2:]], dim=1)
        if self.label_hint:
            label_channel = self.hint_label_values[label].unsqueeze(1)
        else:
            label_channel = (label > 0).unsqueeze(1).to(hint.dtype) * 2 - 1
        hint = torch.cat([hint[:, :2], label_channel], dim=1)
        # float32 keeps the UV hint precise under autocast; the convolutions cast as they need.
        projection = texture_projection(texture.float(), label) * self.texture_multiplier
        parts = [hint * self.hint_multiplier + projection[:, :3], hint, projection[:, 3:]]
        if self.label_encoding == "onehot":
            ids = torch.arange(1, self.num_labels + 1, device=label.device).view(1, -1, 1, 1)
            parts.append((label.unsqueeze(1) == ids).float() * 2 - 1)
        return torch.cat(parts, dim=1)

    def extra_repr(self) -> str:
        """Labels and the texture and hint multipliers, for ``repr(module)``."""
        return (
            f"num_labels={self.num_labels}, texture_multiplier={self.texture_multiplier}, "
            f"hint_multiplier={self.hint_multiplier}, label_encoding={self.label_encoding!r}, uv_hint={self.uv_hint}, "
            f"label_hint={self.label_hint}"
        )
