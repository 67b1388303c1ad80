"""TRITON networks: neural neural textures, the sim input x_a, style-free generators, discriminators."""

from __future__ import annotations

from triton_s2r.models.discriminator import MultiScaleDiscriminator, PatchDiscriminator
from triton_s2r.models.generator import ContentEncoder, Decoder, ResidualBlock, StyleFreeGenerator
from triton_s2r.models.neural_texture import NeuralTexture
from triton_s2r.models.raster_texture import RasterTexture
from triton_s2r.models.sim_input import SimInput, hint_labels, texture_projection, uvl_hint, uvl_image
from triton_s2r.models.texture_space import bilinear_taps, sample_label_textures, texel_centers

__all__ = [
    "ContentEncoder",
    "Decoder",
    "MultiScaleDiscriminator",
    "NeuralTexture",
    "PatchDiscriminator",
    "RasterTexture",
    "ResidualBlock",
    "SimInput",
    "StyleFreeGenerator",
    "bilinear_taps",
    "hint_labels",
    "sample_label_textures",
    "texel_centers",
    "texture_projection",
    "uvl_hint",
    "uvl_image",
]
