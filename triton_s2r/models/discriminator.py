"""Multi-scale PatchGAN discriminator (MUNIT ``MsImageDis``; docs/method.md §3.2).

Each scale is a PatchGAN without normalisation: conv4 s2 (→base), LeakyReLU(0.2), then
``num_layers - 1`` × [conv4 s2, ×2 channels, LeakyReLU(0.2)], then a 1×1 conv to one logit per patch.
Between scales the image is downsampled by AvgPool 3×3, stride 2, pad 1, ``count_include_pad=False``.
Weights start N(0, 0.02) with zero bias, as in the reference. Pair with ``triton_s2r.losses.adversarial``
(LSGAN in the reference, hinge as an option), which sums over the scales.
"""

from __future__ import annotations

from torch import Tensor, nn

from triton_s2r.models.conv import Conv2d, PaddingMode


class PatchDiscriminator(nn.Module):
    """One scale: image → patch logits.

    Args:
        in_channels: image channels.
        base_channels: width of the first conv; doubles per layer. Reference: 64.
        num_layers: stride-2 convs (a 256² input gives 256 / 2^n patches per side). Reference: 4.
        padding_mode: padding of the convs. Reference: "reflect".
    """

    def __init__(
        self, in_channels: int, base_channels: int = 64, num_layers: int = 4, padding_mode: PaddingMode = "reflect"
    ) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        width_in, width = in_channels, base_channels
        for _ in range(num_layers):
            layers += [
                Conv2d(width_in, width, 4, 2, 1, padding_mode=padding_mode),
                nn.LeakyReLU(0.2, inplace=True),
            ]
            width_in, width = width, width * 2
        layers.append(nn.Conv2d(width_in, 1, 1))
        self.layers = nn.Sequential(*layers)

    def forward(self, x: Tensor) -> Tensor:
        """(B, in_channels, H, W) → (B, 1, H / 2^n, W / 2^n) unbounded logits."""
        return self.layers(x)


class MultiScaleDiscriminator(nn.Module):
    """PatchGAN discriminators applied to an image pyramid.

    Args:
        in_channels: image channels (6 for D_A on x_a, 3 for D_B on photos).
        base_channels: width of each scale's first conv. Reference: 64.
        num_layers: stride-2 convs per scale. Reference: 4. The coarsest scale's input side, about
            H / 2^(num_scales - 1), must be at least 2^num_layers for reflect padding (``min_input_side``).
        num_scales: pyramid levels. Reference: 3; ours 4, so the coarsest scale sees a whole 256² crop.
        padding_mode: padding of the convs. Reference: "reflect".
    """

    def __init__(
        self,
        in_channels: int,
        base_channels: int = 64,
        num_layers: int = 4,
        num_scales: int = 3,
        padding_mode: PaddingMode = "reflect",
    ) -> None:
        super().__init__()
        self.scales = nn.ModuleList(
            [
                PatchDiscriminator(in_channels, base_channels, num_layers, padding_mode)
                for _ in range(num_scales)
            ]
        )
        self.downsample = nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False)
        self.in_channels, self.num_layers, self.num_scales = in_channels, num_layers, num_scales
        for layer in self.modules():
            if isinstance(layer, nn.Conv2d):
                nn.init.normal_(layer.weight, 0.0, 0.02)
                if layer.bias is not None:
                    nn.init.zeros_(layer.bias)

    def min_input_side(self) -> int:
        """The smallest image side every scale can take: the coarsest scale's input must keep 2^num_layers."""
        side = 2**self.num_layers
        for _ in range(self.num_scales - 1):
            side = 2 * side - 1  # the average pooling halves a side s to ceil(s / 2)
        return side

    def forward(self, x: Tensor) -> list[Tensor]:
        """Patch logits at every scale.

        Args:
            x: (B, in_channels, H, W) float.

        Returns:
            ``num_scales`` tensors, finest first; scale s is (B, 1, H / 2^(s + n), W / 2^(s + n)).
        """
        logits = []
        for index, scale in enumerate(self.scales):
            if index > 0:
                x = self.downsample(x)
            logits.append(scale(x))
        return logits
