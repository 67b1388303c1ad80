"""Neural neural textures: one Fourier-feature MLP per label (TRITON, CoRL 2022, §3.1; docs/method.md §2.2).

Each label l in 1..K owns an MLP f_l that maps a fixed random Fourier encoding of (u, v),
``[sin(2π·uv·B), cos(2π·uv·B)]`` with ``B ~ N(0, scale²)`` of shape (2, F), to C channels in [0, 1]
(sigmoid); the first three are the RGB "recovered texture". Departures from the reference code, as decided
in docs/method.md §8.3-§8.4:

* no BatchNorm in the MLP, so train and eval outputs are identical;
* the MLP is queried at each pixel's exact UV (``sampling="exact"``), not on a 256² raster looked up with
  nearest texels; ``sampling="baked"`` instead evaluates the MLP on a raster and samples it bilinearly;
* the frequencies B come from ``seed`` and are a persistent buffer, so a state dict reproduces the texture.

All K MLPs run together: their weights are stacked as (K, in, out) tensors. For per-pixel queries the
pixels are sorted by label and packed into tiles of ``tile_size`` rows, each tile holding pixels of one
label only, so every layer is one batched matmul against the tiles' gathered weights. The packing has
static shapes: no device synchronisation per call.
Texture-space axes (rows = u, columns = v) are defined in ``texture_space.py``.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn
from torch.utils.checkpoint import checkpoint

from triton_s2r.models.texture_space import check_labels, sample_label_textures, texel_centers

#: Pixels evaluated per call at most (hidden activations of 256 channels stay well under 2^31 elements).
MAX_PIXELS_PER_CALL = 2**22


def _pack_by_label(labels: Tensor, num_labels: int, tile_size: int) -> tuple[Tensor, Tensor]:
    """Assign every entry of a flat label vector a row in a buffer of single-label tiles.

    Shapes depend only on N, K and T, never on the label values, so packing needs no device
    synchronisation (and can be captured or compiled). Void entries are packed too, into their own tiles,
    and evaluated with the last label's MLP; callers zero them afterwards.

    Args:
        labels: (N,) int64; 0 = void, 1..K = objects.
        num_labels: K.
        tile_size: T, rows per tile.

    Returns:
        ``(slot, tile_label)``: (N,) each entry's row in the packed (num_tiles * T) buffer, distinct, and
        (num_tiles,) the 0-based label of each tile, with ``num_tiles = ceil(N / T) + K + 1`` (enough for
        K + 1 groups each padded to whole tiles).
    """
    group = torch.where(labels > 0, labels - 1, num_labels)  # void last, as group K
    sorted_group, order = torch.sort(group)
    boundaries = torch.arange(num_labels + 2, device=labels.device)
    group_start = torch.searchsorted(sorted_group, boundaries)  # (K + 2,): first sorted entry of each group
    counts = group_start[1:] - group_start[:-1]
    tiles_per_group = (counts + tile_size - 1) // tile_size
    tile_end = torch.cumsum(tiles_per_group, 0)
    rank = torch.arange(labels.numel(), device=labels.device) - group_start[sorted_group]
    slot = torch.empty_like(order).scatter_(0, order, (tile_end - tiles_per_group)[sorted_group] * tile_size + rank)
    num_tiles = -(-labels.numel() // tile_size) + num_labels + 1
    tiles = torch.arange(num_tiles, device=labels.device)
    tile_label = torch.searchsorted(tile_end, tiles, right=True).clamp(max=num_labels - 1)
    return slot, tile_label


class NeuralTexture(nn.Module):
    """Per-label Fourier-feature MLP textures, evaluated for all labels at once.

    Args:
        num_labels: K, number of object labels (void label 0 excluded); one texture each.
        out_channels: C, texture channels; the first 3 are RGB. Reference: 3.
        num_frequencies: F, random frequencies; the encoding has 2F features. Reference: 128.
        frequency_scale: standard deviation of the frequencies (cycles per unit UV). Reference: 10.
        hidden_channels: width of the hidden layers. Reference: 256.
        num_hidden_layers: hidden layers (ReLU); the MLP has ``num_hidden_layers + 1`` linear maps.
            Reference: 3.
        sampling: ``"exact"`` queries the MLP at each pixel's UV; ``"baked"`` evaluates it on a
            ``bake_resolution``² raster per label and samples that bilinearly (cheaper when
            K·R² < B·H·W, e.g. at inference).
        bake_resolution: raster side used by ``sampling="baked"``.
        tile_size: rows per single-label tile in exact sampling (a speed/memory knob; no effect on
            the result beyond float rounding).
        recompute: keep only the packed UVs of an exact-sampling call for the backward pass and evaluate the
            encoding and MLP again there (activation checkpointing), instead of keeping every layer's
            activations, the largest tensors of a training step (docs/benchmarks.md, "Neural texture
            memory"). The same values and gradients, one more forward pass of the MLP.
        seed: seeds the frequencies and the initial MLP weights (Kaiming-normal, zero bias, as the
            reference), independently of the global RNG.
        output_init_scale: multiplies the initial weights of the last linear map. 1 (reference) starts every
            texture as bright high-frequency noise; 0 starts them uniform grey (0.5, so π = 0 and x_a equals
            the hint-only input of ``no_texture``), and they grow from the gradients.
    """

    frequencies: Tensor  # (2, F) buffer, registered in __init__

    def __init__(
        self,
        num_labels: int,
        out_channels: int = 3,
        num_frequencies: int = 128,
        frequency_scale: float = 10.0,
        hidden_channels: int = 256,
        num_hidden_layers: int = 3,
        sampling: str = "exact",
        bake_resolution: int = 256,
        tile_size: int = 4096,
        recompute: bool = False,
        seed: int = 0,
        output_init_scale: float = 1.0,
    ) -> None:
        super().__init__()
        if output_init_scale < 0:
            raise ValueError(f"output_init_scale must be >= 0, got {output_init_scale}")
        if sampling not in ("exact", "baked"):
            raise ValueError(f"sampling must be 'exact' or 'baked', got {sampling!r}")
        if num_labels < 1:
            raise ValueError(f"num_labels must be >= 1, got {num_labels}")
        self.num_labels = num_labels
        self.out_channels = out_channels
        self.sampling = sampling
        self.bake_resolution = bake_resolution
        self.tile_size = tile_size
        self.recompute = recompute

        generator = torch.Generator().manual_seed(seed)
        frequencies = torch.randn(2, num_frequencies, generator=generator) * frequency_scale
        self.register_buffer("frequencies", frequencies)  # persistent: checkpoints reproduce the texture

        widths = [2 * num_frequencies] + [hidden_channels] * num_hidden_layers + [out_channels]
        self.weights = nn.ParameterList()
        self.biases = nn.ParameterList()
        for index, (fan_in, fan_out) in enumerate(zip(widths[:-1], widths[1:], strict=True)):
            std = math.sqrt(2.0 / fan_in)  # Kaiming-normal, fan_in mode, ReLU gain
            if index == len(widths) - 2:
                std *= output_init_scale
            self.weights.append(
                nn.Parameter(torch.randn(num_labels, fan_in, fan_out, generator=generator) * std)
            )
            self.biases.append(nn.Parameter(torch.zeros(num_labels, 1, fan_out)))

    def encode(self, uv: Tensor) -> Tensor:
        """Fourier features of UV points.

        Args:
            uv: (..., 2) float; (u, v), clamped to [0, 1].

        Returns:
            (..., 2F) float32, ``[sin(2π·uv·B), cos(2π·uv·B)]``.
        """
        # Arguments reach 2π·|uv·B| ~ 250 rad; under bf16 autocast they would lose all phase precision.
        with torch.autocast(device_type=uv.device.type, enabled=False):
            phase = (2.0 * math.pi) * (uv.float().clamp(0.0, 1.0) @ self.frequencies)
            return torch.cat([torch.sin(phase), torch.cos(phase)], dim=-1)

    def _mlp(self, features: Tensor, tile_label: Tensor | None) -> Tensor:
        """Run the stacked MLPs.

        Args:
            features: (G, P, 2F) per-group inputs, or (P, 2F) shared by all K labels.
            tile_label: (G,) 0-based label of each group, or None when the groups are the K labels.

        Returns:
            (G, P, C) or (K, P, C) in [0, 1].
        """
        hidden = features
        last = len(self.weights) - 1
        for index, (weight, bias) in enumerate(zip(self.weights, self.biases, strict=True)):
            if tile_label is not None:
                weight, bias = weight[tile_label], bias[tile_label]
            hidden = torch.matmul(hidden, weight)
            if index == last:  # the C output channels in float32
                hidden = torch.sigmoid(hidden + bias)
            else:  # the wide hidden layers stay in the matmul's dtype (bf16 under autocast), as nn.Linear's do
                hidden = torch.relu(hidden + bias.to(hidden.dtype))
        return hidden

    def forward(self, uv: Tensor, label: Tensor) -> Tensor:
        """Sample every pixel's label texture at its UV.

        Args:
            uv: (B, 2, H, W) float; channel 0 = u, 1 = v, in [0, 1].
            label: (B, H, W) int64; 0 = void, 1..K = objects.

        Returns:
            (B, C, H, W) in [0, 1] (float32, or the autocast dtype); zeros at void pixels.
        """
        check_labels(label, self.num_labels, check_range=not label.is_cuda)
        if self.sampling == "baked":
            return sample_label_textures(self.bake(self.bake_resolution), uv, label)
        if label.numel() > MAX_PIXELS_PER_CALL:
            # The hidden activations (pixels x width) must stay under 2^31 elements for CUDA kernels' 32-bit
            # indexing: split the batch, or the rows of a single huge image.
            if label.shape[0] > 1:
                size = max(1, MAX_PIXELS_PER_CALL // label[0].numel())
                return torch.cat([self(u, lab) for u, lab in zip(uv.split(size), label.split(size), strict=True)])
            rows = max(1, MAX_PIXELS_PER_CALL // label.shape[-1])
            return torch.cat([self(u, lab) for u, lab in zip(uv.split(rows, -2), label.split(rows, -2), strict=True)],
                             dim=-2)

        batch, _, height, width = uv.shape
        flat_uv = uv.permute(0, 2, 3, 1).reshape(-1, 2)
        flat_label = label.reshape(-1)
        # Small inputs get smaller tiles, so that padding each of the K + 1 groups to whole tiles stays cheap.
        tile = max(1, min(self.tile_size, flat_label.numel() // (4 * (self.num_labels + 1))))
        slot, tile_label = _pack_by_label(flat_label, self.num_labels, tile)

        packed_uv = flat_uv.new_zeros(tile_label.numel() * tile, 2).index_copy_(0, slot, flat_uv)
        if self.recompute and torch.is_grad_enabled():
            packed = checkpoint(self._packed_mlp, packed_uv, tile_label, use_reentrant=False)
        else:
            packed = self._packed_mlp(packed_uv, tile_label)
        values = packed[slot] * (flat_label > 0).unsqueeze(1).to(packed.dtype)  # (N, C), void zeroed
        return values.view(batch, height, width, self.out_channels).permute(0, 3, 1, 2).contiguous()

    def _packed_mlp(self, packed_uv: Tensor, tile_label: Tensor) -> Tensor:
        """Texture values of packed UVs: (G * T, 2) and (G,) tile labels -> (G * T, C) in [0, 1]."""
        features = self.encode(packed_uv).view(tile_label.numel(), -1, 2 * self.frequencies.shape[1])
        return self._mlp(features, tile_label).reshape(-1, self.out_channels)

    def bake(self, resolution: int | None = None) -> Tensor:
        """Evaluate every label's texture on a raster (export, or the "baked" sampling mode).

        Differentiable; wrap in ``torch.no_grad()`` for export.

        Args:
            resolution: R, texels per side; defaults to ``bake_resolution``.

        Returns:
            (K, C, R, R) in [0, 1]; ``[l - 1, :, row, col]`` is label l at texel centre
            ``(u, v) = ((row + 0.5) / R, (col + 0.5) / R)``: **rows follow u, columns follow v**.
        """
        resolution = self.bake_resolution if resolution is None else resolution
        uv = texel_centers(resolution, device=self.frequencies.device).view(-1, 2)
        # Chunks bound the (K, chunk, hidden) activations when baking large rasters.
        chunks = [self._mlp(self.encode(chunk), None) for chunk in uv.split(self.tile_size)]
        texels = torch.cat(chunks, dim=1)  # (K, R*R, C)
        return texels.view(self.num_labels, resolution, resolution, -1).permute(0, 3, 1, 2).contiguous()

    def extra_repr(self) -> str:
        """Labels, channels, frequencies and sampling, for ``repr(module)``."""
        return (
            f"num_labels={self.num_labels}, out_channels={self.out_channels}, "
            f"num_frequencies={self.frequencies.shape[1]}, sampling={self.sampling!r}"
        )
