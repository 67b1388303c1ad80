"""Stateless inference: load a trained run and translate G-buffers into real-looking images.

Examples::

    from triton_s2r.inference.translator import Translator
    from triton_s2r.data.datasets import BenchmarkDataset

    translator = Translator.from_run_dir("outputs/runs/demo")          # last checkpoint, CUDA if present
    frames = BenchmarkDataset.open("outputs/data/small").uvl_frames("test")
    out = translator(frames[0])                                         # a one-frame GBuffer
    out.translation.shape                                               # (1, 3, 128, 128), in [0, 1]

The translator is the same ``TritonModel`` that training optimises (texture, x_a, E_A, G_B), built from the
run's resolved ``config.yaml`` and loaded from a Lightning checkpoint. It keeps no state between calls:
a surface point looks the same in every frame because it samples the same learned texture (paper §3.1).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields
from typing import cast

import torch
from torch import Tensor, nn

from triton_s2r.models.texture_space import check_labels
from triton_s2r.models.triton import SimBatch, TritonModel, to_unit
from triton_s2r.render.gbuffer import GBuffer
from triton_s2r.render.scene import LabelTable, Scene
from triton_s2r.runs.config import build_model
from triton_s2r.runs.run_dir import CheckpointError, RunDir, load_model_weights


@dataclass(frozen=True)
class TranslationOutput:
    """What one ``Translator`` call returns for a batch of B frames of H x W pixels.

    Attributes:
        translation: (B, 3, H, W) float32 in [0, 1], the sim->real translation x_ab.
        texture: (B, 3, H, W) float32 in [0, 1], the texture projection (the learned texture's RGB sampled
            at each pixel's UV, antialiased when supersampled); black on void pixels.
        mask: (B, H, W) bool, True where the pixel shows a surface (label != void).
    """

    translation: Tensor
    texture: Tensor
    mask: Tensor


#: Pixels (at G-buffer resolution) per model call at most; 32 frames of 512 x 512.
MAX_PIXELS_PER_CALL = 2**23


def resolve_device(device: str | torch.device = "auto") -> torch.device:
    """``"auto"`` is CUDA when available, else CPU; anything else is passed to ``torch.device``."""
    if str(device) == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise RuntimeError(f"device {device} requested but CUDA is not available; use --device cpu or auto")
    return device


class Translator:
    """A trained TRITON translator: G-buffers in, translations, texture projections and masks out.

    Build it with ``from_run_dir``; call it on a ``GBuffer``. Deterministic: the model is in eval mode
    (no encoder input noise), so the same input gives bit-identical output on the same device.

    Args:
        model: the trained ``TritonModel``.
        labels: the label table of the training data (decodes UVL files); None when unknown.
        run: the run directory it was loaded from (its scene copy, frame size, messages); None for a model
            built in code.
    """

    def __init__(
        self,
        model: TritonModel,
        *,
        labels: LabelTable | None = None,
        run: RunDir | None = None,
        texture_resolution: int | None = 1024,
        compile: bool = False,
    ) -> None:
        if labels is not None and labels.num_labels != model.num_labels:
            raise ValueError(f"label table has {labels.num_labels} labels but the model {model.num_labels}")
        self.model = model.eval()
        # E_A halves the size at each stride-2 conv and G_B doubles it back: other sizes are padded to a multiple.
        strided = [m for m in model.generator_sim.encoder.modules() if isinstance(m, nn.Conv2d) and m.stride[0] > 1]
        self.size_multiple = 2 ** len(strided)
        self.label_table = labels  # None for a model built in code; see `labels`
        self.run = run
        # The texture is fixed at inference, so it is rasterised once and sampled bilinearly, as the paper
        # does (docs/method.md §2.3, §6.2); None evaluates it exactly at every pixel's UV (slower, same to ~1e-3).
        self.texture_resolution = texture_resolution
        self._baked: Tensor | None = None
        # Compiling fuses the norms, activations and padding around the convolutions; each new batch shape
        # compiles once (seconds to minutes), so it pays off for long sequences of fixed-size batches.
        self._translate = torch.compile(self._translate, dynamic=False) if compile else self._translate

    @classmethod
    def from_run_dir(
        cls,
        run_dir: str | os.PathLike,
        checkpoint: str | os.PathLike | None = None,
        device: str | torch.device = "auto",
        texture_resolution: int | None = 1024,
        compile: bool = False,
    ) -> Translator:
        """Load a run written by ``triton-s2r train``.

        Args:
            run_dir: the run directory (``config.yaml`` and ``checkpoints/``).
            checkpoint: None for the last checkpoint, else a file or a name in ``checkpoints/``.
            device: ``"auto"`` (CUDA if available), ``"cpu"``, ``"cuda"``, ``"cuda:1"``, ...
            texture_resolution: rasterise the texture once at R x R per label and sample it bilinearly
                (default 1024); None evaluates the texture network at every pixel.
            compile: ``torch.compile`` the translation (faster on GPUs for fixed batch shapes; the first
                call of each shape compiles).

        Raises:
            FileNotFoundError: the run directory, its config or the checkpoint is missing.
            ConfigError: the config names something other than triton_s2r model classes (nothing is run).
            CheckpointError: the checkpoint is unreadable or does not match the config.
        """
        run = RunDir.open(run_dir)
        # The model.translator section builds a TritonModel; build_model is typed for every model section.
        model = cast(TritonModel, build_model(run.config().model.translator, source=run.config_path))
        path = run.checkpoint(checkpoint)
        try:
            model.load_state_dict(load_model_weights(path))
        except RuntimeError as exc:
            if isinstance(exc, CheckpointError):
                raise
            raise CheckpointError(f"{path}: weights do not fit the model of {run.config_path} ({exc}); was the "
                                  f"checkpoint written by another run?") from exc
        return cls(model, labels=run.labels(), run=run, texture_resolution=texture_resolution,
                   compile=compile).to(resolve_device(device))

    def to(self, device: str | torch.device) -> Translator:
        """Move the model to ``device`` (``"auto"`` allowed); returns self."""
        self.model.to(resolve_device(device))
        self._baked = None
        return self

    @property
    def device(self) -> torch.device:
        """The device the model's weights are on."""
        return next(self.model.parameters()).device

    @property
    def num_labels(self) -> int:
        """K, the number of object labels the model knows (void excluded)."""
        return self.model.num_labels

    @property
    def labels(self) -> LabelTable:
        """The training data's label table (maps UVL file values to label ids).

        Raises:
            ValueError: the run recorded no label table (a run older than ``data.yaml``).
        """
        if self.label_table is None:
            raise ValueError(f"the label table of run {self.run.path if self.run else '(built in code)'} is "
                             f"unknown (no data.yaml); translate a benchmark dataset folder, whose dataset.yaml "
                             f"holds the labels")
        return self.label_table

    def scene(self) -> Scene:
        """The baked copy of the scene the run was trained on, for rendering states.

        Raises:
            FileNotFoundError: the run keeps no scene (trained on UVL folders, or built in code).
        """
        if self.run is None:
            raise FileNotFoundError("this translator was built in code and has no scene; pass one (--scene)")
        return self.run.scene()

    @torch.inference_mode()
    def __call__(self, gbuffer: GBuffer, supersample: int = 1) -> TranslationOutput:
        """Translate a batch of G-buffers.

        Args:
            gbuffer: B frames rendered at ``supersample`` times the output size: ``uv`` (B, 2, kH, kW) in
                [0, 1], ``label`` (B, kH, kW) int64 in 0..K. Moved to the translator's device.
            supersample: k; the texture is averaged over each k x k block (antialiasing), UVs and labels are
                taken at each block's top-left subsample.

        Returns:
            The (B, ., H, W) output; bf16 autocast on CUDA, float32 results. Any H and W work: sizes that are
            not a multiple of ``size_multiple`` (4 for the reference generator) are padded by edge replication
            for the generator and cropped back.
        """
        if gbuffer.height % supersample or gbuffer.width % supersample:
            raise ValueError(f"G-buffer of {gbuffer.height}x{gbuffer.width} pixels is not a multiple of "
                             f"supersample={supersample}")
        frames = max(1, MAX_PIXELS_PER_CALL // (gbuffer.height * gbuffer.width))
        if gbuffer.batch_size > frames:
            # Large batches go through in parts: some CUDA kernels index with 32 bits, and memory stays bounded.
            parts = [self(gbuffer[i:i + frames], supersample) for i in range(0, gbuffer.batch_size, frames)]
            joined = (torch.cat([getattr(part, f.name) for part in parts]) for f in fields(TranslationOutput))
            return TranslationOutput(*joined)
        check_labels(gbuffer.label, self.num_labels)  # the model skips this check on CUDA
        device = self.device
        if self.texture_resolution and self._baked is None:
            self._baked = self.model.texture.bake(self.texture_resolution).float()
        label = gbuffer.label.to(device)
        translation, texture = self._translate(gbuffer.uv.to(device), label, supersample,
                                               self._baked if self.texture_resolution else None)
        mask = label[..., ::supersample, ::supersample] != 0
        texture = texture[:, :3].float().clamp(0, 1) * mask[:, None]
        return TranslationOutput(translation=to_unit(translation), texture=texture, mask=mask)

    def _translate(self, uv: Tensor, label: Tensor, supersample: int, baked: Tensor | None) -> tuple[Tensor, Tensor]:
        """(x_ab in [-1, 1], sampled texture in [0, 1]) of a batch on the model's device; bf16 on CUDA."""
        device_type = uv.device.type
        with torch.autocast(device_type=device_type, dtype=torch.bfloat16, enabled=device_type == "cuda"):
            batch = self.model.sample_texture(uv, label, supersample, baked=baked)
            height, width = batch.label.shape[-2:]
            # Sizes the generator cannot take: replicate the last rows and columns, translate, crop them off again.
            padded = SimBatch(*(_pad_edges(t, -height % self.size_multiple, -width % self.size_multiple)
                                for t in (batch.uv, batch.label, batch.texture)))
            x_a, _ = self.model.sim_image(padded)
            return self.model.translate(x_a, padded)[..., :height, :width], batch.texture

    @torch.inference_mode()
    def bake_textures(self, resolution: int = 512) -> Tensor:
        """Evaluate every label's learned RGB texture on a raster.

        Args:
            resolution: R, texels per side.

        Returns:
            (K, 3, R, R) float32 in [0, 1] on the translator's device; ``[l - 1, :, row, col]`` is label l at
            ``(u, v) = ((row + 0.5) / R, (col + 0.5) / R)``: rows follow u, columns follow v (see
            ``models/texture_space.py``; ``export.texture_image`` turns it into an ordinary image).
        """
        if resolution < 1:
            raise ValueError(f"resolution must be >= 1, got {resolution}")
        return self.model.texture.bake(resolution)[:, :3].float().clamp(0, 1)

    @torch.inference_mode()
    def label_photos(self, photos: Tensor) -> Tensor:
        """How the real->sim translator labels real photos: the label channel of x_ba = G_A(E_B(photo)).

        Unpaired training can tie each object to its real colour only where this labelling finds the objects
        (the real -> sim -> real cycle), so it is a diagnostic of training (``triton-s2r eval``'s
        ``real_label_iou_by_label``), not part of translating.

        Args:
            photos: (B, 3, H, W) float in [0, 1]; moved to the translator's device. Any H and W work (padded as in
                ``__call__``).

        Returns:
            (B, H, W) int64 label ids in 0..K on the translator's device (``SimInput.decode_labels``).
        """
        frames = max(1, MAX_PIXELS_PER_CALL // (photos.shape[-2] * photos.shape[-1]))
        if photos.shape[0] > frames:
            return torch.cat([self.label_photos(photos[i:i + frames]) for i in range(0, photos.shape[0], frames)])
        height, width = photos.shape[-2:]
        real = _pad_edges(photos.to(self.device).float() * 2 - 1, -height % self.size_multiple,
                          -width % self.size_multiple)
        device_type = real.device.type
        with torch.autocast(device_type=device_type, dtype=torch.bfloat16, enabled=device_type == "cuda"):
            x_ba = self.model.real_to_sim(real)
        return self.model.sim_input.decode_labels(x_ba)[..., :height, :width]


def _pad_edges(image: Tensor, pad_h: int, pad_w: int) -> Tensor:
    """Repeat the last ``pad_h`` rows and ``pad_w`` columns of (..., H, W) of any dtype (labels included)."""
    if not (pad_h or pad_w):
        return image
    height, width = image.shape[-2:]
    rows = torch.arange(height + pad_h, device=image.device).clamp(max=height - 1)
    cols = torch.arange(width + pad_w, device=image.device).clamp(max=width - 1)
    return image[..., rows, :][..., cols]
