"""Style-free MUNIT auto-encoders: content encoder E and decoder G (docs/method.md §3.1; paper §3.2).

TRITON removes MUNIT's style encoder, style MLP and AdaIN, so translation is unimodal and deterministic
at eval. Translations swap halves of two auto-encoders: sim->real is ``x_ab = G_B(E_A(x_a))`` and
real->sim is ``x_ba = G_A(E_B(x_b))``. With the reference widths a 256² input gives an 8-channel content
code at 64², a bottleneck from the Pfeiffer/Rivoir lineage that leaves little room to carry the sim
domain's appearance through; the shipped config widens it to 32 channels (docs/method.md §3.1).

Reference layers (reflect padding everywhere, Kaiming-normal init, zero bias):

* E: conv7 s1 (→64), IN, ReLU; ``num_downsample`` × [conv4 s2, ×2 channels, IN, ReLU];
  ``num_res_blocks`` residual blocks (IN); conv3 (→content_channels), ReLU, no norm.
* G: conv3 (content→width), ReLU, no norm; ``num_res_blocks`` residual blocks (IN);
  ``num_downsample`` × [nearest ×2, conv5, ÷2 channels, LayerNorm, ReLU]; conv7 (→out), tanh.

The reference's custom LayerNorm normalises each sample over C·H·W and applies a per-channel affine with
γ ~ U(0, 1), β = 0; ``LayerNorm2d`` computes the same up to biased-vs-unbiased std and where eps enters.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from triton_s2r.models.conv import Conv2d, PaddingMode


def _conv(in_channels: int, out_channels: int, kernel_size: int, stride: int, padding_mode: PaddingMode) -> Conv2d:
    # Padding that keeps H/stride exactly for even sizes: 3 for 7x7, 1 for 4x4 stride 2, 2 for 5x5, 1 for 3x3.
    padding = (kernel_size - 1) // 2 if stride == 1 else (kernel_size - stride) // 2
    return Conv2d(in_channels, out_channels, kernel_size, stride, padding, padding_mode=padding_mode)


class ResidualBlock(nn.Module):
    """conv3–IN–ReLU–conv3–IN plus identity skip; channels and size unchanged.

    Args:
        channels: input and output channels.
        padding_mode: padding of the convolutions ("reflect" in the reference).
    """

    def __init__(self, channels: int, padding_mode: PaddingMode = "reflect") -> None:
        super().__init__()
        self.body = nn.Sequential(
            _conv(channels, channels, 3, 1, padding_mode),
            nn.InstanceNorm2d(channels),
            nn.ReLU(inplace=True),
            _conv(channels, channels, 3, 1, padding_mode),
            nn.InstanceNorm2d(channels),
        )

    def forward(self, x: Tensor) -> Tensor:
        """Add the residual: (B, C, H, W) -> x + body(x), same shape."""
        return x + self.body(x)


class ContentEncoder(nn.Module):
    """Image → content code.

    Args:
        in_channels: image channels (6 for the sim domain x_a, 3 for photos).
        base_channels: width after the first conv; doubles at every downsampling. Reference: 64.
        num_downsample: stride-2 convs; the code is at 1/2^n resolution. Reference: 2.
        num_res_blocks: residual blocks at the bottom width. Reference: 4.
        content_channels: channels of the content code. Reference: 8.
        padding_mode: padding of every conv. Reference: "reflect".
    """

    def __init__(
        self,
        in_channels: int,
        base_channels: int = 64,
        num_downsample: int = 2,
        num_res_blocks: int = 4,
        content_channels: int = 8,
        padding_mode: PaddingMode = "reflect",
    ) -> None:
        super().__init__()
        layers: list[nn.Module] = [
            _conv(in_channels, base_channels, 7, 1, padding_mode),
            nn.InstanceNorm2d(base_channels),
            nn.ReLU(inplace=True),
        ]
        width = base_channels
        for _ in range(num_downsample):
            layers += [
                _conv(width, 2 * width, 4, 2, padding_mode),
                nn.InstanceNorm2d(2 * width),
                nn.ReLU(True),
            ]
            width *= 2
        layers += [ResidualBlock(width, padding_mode) for _ in range(num_res_blocks)]
        layers += [_conv(width, content_channels, 3, 1, padding_mode), nn.ReLU(inplace=True)]
        self.layers = nn.Sequential(*layers)
        self.bottom_channels = width

    def forward(self, x: Tensor) -> Tensor:
        """Encode.

        Args:
            x: (B, in_channels, H, W) float, H and W divisible by 2^num_downsample.

        Returns:
            (B, content_channels, H / 2^n, W / 2^n), non-negative (ReLU).
        """
        return self.layers(x)


class LayerNorm2d(nn.Module):
    """Normalise each sample over C·H·W, then a per-channel affine (the reference decoder's LayerNorm).

    ``nn.GroupNorm(1, C)`` computes the same, but its CUDA kernel reduces each sample with one thread
    block, which took a third of the GPU time of a training step at batch 5; ``torch.var_mean`` spreads
    the reduction over the whole device. Statistics in fp32 under autocast.

    Args:
        channels: C.
        eps: added to the variance.
    """

    def __init__(self, channels: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(channels))
        self.bias = nn.Parameter(torch.zeros(channels))

    def forward(self, x: Tensor) -> Tensor:
        """(B, C, H, W) -> (B, C, H, W), same dtype."""
        flat = x.float().flatten(1)
        var, mean = torch.var_mean(flat, dim=1, correction=0, keepdim=True)
        y = ((flat - mean) * torch.rsqrt(var + self.eps)).view_as(x)
        return (y * self.weight[:, None, None] + self.bias[:, None, None]).to(x.dtype)


class Decoder(nn.Module):
    """Content code → image.

    Args:
        out_channels: image channels (6 for x_a, 3 for photos).
        base_channels: width before the last conv; the first conv has base·2^n channels. Reference: 64.
        num_upsample: nearest ×2 upsamplings, matching the encoder's ``num_downsample``. Reference: 2.
        num_res_blocks: residual blocks at the bottom width. Reference: 4.
        content_channels: channels of the content code. Reference: 8.
        padding_mode: padding of every conv. Reference: "reflect".
    """

    def __init__(
        self,
        out_channels: int,
        base_channels: int = 64,
        num_upsample: int = 2,
        num_res_blocks: int = 4,
        content_channels: int = 8,
        padding_mode: PaddingMode = "reflect",
    ) -> None:
        super().__init__()
        width = base_channels * 2**num_upsample
        layers: list[nn.Module] = [_conv(content_channels, width, 3, 1, padding_mode), nn.ReLU(inplace=True)]
        layers += [ResidualBlock(width, padding_mode) for _ in range(num_res_blocks)]
        for _ in range(num_upsample):
            layers += [
                nn.Upsample(scale_factor=2, mode="nearest"),
                _conv(width, width // 2, 5, 1, padding_mode),
                LayerNorm2d(width // 2),
                nn.ReLU(inplace=True),
            ]
            width //= 2
        layers += [_conv(width, out_channels, 7, 1, padding_mode), nn.Tanh()]
        self.layers = nn.Sequential(*layers)

    def forward(self, content: Tensor) -> Tensor:
        """Decode.

        Args:
            content: (B, content_channels, h, w) float.

        Returns:
            (B, out_channels, h·2^n, w·2^n) in [-1, 1] (tanh). Channels 0-2 of x_a can reach ±2 with the
            reference multipliers, so the sim-domain reconstruction cannot be exact there (as in the
            reference).
        """
        return self.layers(content)


def init_generator_weights(module: nn.Module) -> None:
    """Reference initialisation: Kaiming-normal (fan_in) convs with zero bias, layer-norm γ ~ U(0, 1)."""
    for layer in module.modules():
        if isinstance(layer, nn.Conv2d):
            nn.init.kaiming_normal_(layer.weight, a=0.0, mode="fan_in")
            if layer.bias is not None:
                nn.init.zeros_(layer.bias)
        elif isinstance(layer, LayerNorm2d):
            nn.init.uniform_(layer.weight, 0.0, 1.0)
            nn.init.zeros_(layer.bias)


class StyleFreeGenerator(nn.Module):
    """One domain's auto-encoder: ``encoder`` E and ``decoder`` G (MUNIT without style).

    Args:
        in_channels: channels of this domain's images (input and reconstruction): 6 for the sim domain
            (``SimInput.out_channels``), 3 for photos.
        base_channels: width of the outermost layers. Reference: 64.
        num_downsample: down- and upsamplings; the content code is at 1/2^n resolution. Reference: 2.
        num_res_blocks: residual blocks in each of E and G. Reference: 4.
        content_channels: channels of the content code. Reference: 8.
        padding_mode: padding of every conv. Reference: "reflect".
        input_noise_std: std of Gaussian noise added to encoder inputs in training mode only
            (reference: 0.1); 0 disables it.
        extra_out_channels: channels the decoder outputs after the image's (``decode_with_extra``), such as
            the shading of ``TritonModel`` (docs/method.md §3.3). Reference: 0.
    """

    def __init__(
        self,
        in_channels: int,
        base_channels: int = 64,
        num_downsample: int = 2,
        num_res_blocks: int = 4,
        content_channels: int = 8,
        padding_mode: PaddingMode = "reflect",
        input_noise_std: float = 0.1,
        extra_out_channels: int = 0,
    ) -> None:
        super().__init__()
        self.in_channels = in_channels
        self.extra_out_channels = extra_out_channels
        self.input_noise_std = input_noise_std
        self.encoder = ContentEncoder(
            in_channels, base_channels, num_downsample, num_res_blocks, content_channels, padding_mode
        )
        self.decoder = Decoder(
            in_channels + extra_out_channels, base_channels, num_downsample, num_res_blocks, content_channels,
            padding_mode,
        )
        init_generator_weights(self)

    def encode(self, x: Tensor) -> Tensor:
        """Content code of ``x``; adds ``input_noise_std`` noise first when training.

        Args:
            x: (B, in_channels, H, W) float, H and W divisible by 2^num_downsample.

        Returns:
            (B, content_channels, H / 2^n, W / 2^n), non-negative.
        """
        x = x.float()  # one input dtype (photos are fp32, translations bf16 under autocast): one compiled graph
        if self.training and self.input_noise_std > 0:
            x = x + torch.randn_like(x) * self.input_noise_std
        return self.encoder(x)

    def decode(self, content: Tensor) -> Tensor:
        """Image of this domain from a content code: (B, content_channels, h, w) → (B, C, H, W) in [-1, 1]."""
        return self.decoder(content)[:, :self.in_channels]

    def decode_with_extra(self, content: Tensor) -> tuple[Tensor, Tensor]:
        """The image and the extra output channels of one decoder pass.

        Returns:
            ``(image, extra)``: (B, C, H, W) and (B, extra_out_channels, H, W), both in [-1, 1].
        """
        out = self.decoder(content)
        return out[:, :self.in_channels], out[:, self.in_channels:]

    def forward(self, x: Tensor) -> Tensor:
        """Within-domain reconstruction ``G(E(x))``: (B, C, H, W) → (B, C, H, W) in [-1, 1]."""
        return self.decode(self.encode(x))
