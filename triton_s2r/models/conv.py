"""``Conv2d`` whose reflect padding compiles to fast kernels.

``torch.compile`` (Inductor, torch 2.11) turns the backward of ``reflection_pad2d`` into an atomic scatter
that took about 30 ms of a 130 ms training step on an H100 (docs/benchmarks.md). Built from slices, flips and
a concatenation instead, the same padding has a backward of plain slices and additions that Inductor fuses.
Eager execution keeps PyTorch's own reflection-pad kernels (one launch instead of several).
"""

from __future__ import annotations

from typing import Literal

import torch
import torch.nn.functional as F
from torch import Tensor, nn

#: ``nn.Conv2d``'s padding modes.
PaddingMode = Literal["zeros", "reflect", "replicate", "circular"]


def reflect_pad(x: Tensor, padding: tuple[int, int, int, int]) -> Tensor:
    """``F.pad(x, padding, mode="reflect")`` from slices: equal values, equal gradients.

    Args:
        x: (..., H, W) tensor with H and W larger than the padding on their side.
        padding: (left, right, top, bottom), each >= 0.

    Returns:
        (..., H + top + bottom, W + left + right); the border mirrors x without repeating its edge row or column.
    """
    left, right, top, bottom = padding
    x = torch.cat([x[..., 1:left + 1].flip(-1), x, x[..., x.shape[-1] - right - 1:-1].flip(-1)], dim=-1)
    return torch.cat([x[..., 1:top + 1, :].flip(-2), x, x[..., x.shape[-2] - bottom - 1:-1, :].flip(-2)], dim=-2)


class Conv2d(nn.Conv2d):
    """``nn.Conv2d`` (same parameters, same state-dict keys) that pads with ``reflect_pad`` when compiled."""

    def forward(self, input: Tensor) -> Tensor:
        """(B, C_in, H, W) -> (B, C_out, H', W') as ``nn.Conv2d``; compiled, it reflect-pads with ``reflect_pad``."""
        if self.padding_mode != "reflect" or isinstance(self.padding, str) or not torch.compiler.is_compiling():
            return super().forward(input)
        height, width = self.padding
        padded = reflect_pad(input, (width, width, height, height))
        return F.conv2d(padded, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)
