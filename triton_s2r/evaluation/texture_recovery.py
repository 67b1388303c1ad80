"""Texture recovery: how close each label's learned texture is to the benchmark's hidden albedo.

Only a benchmark that knows the truth can measure it: ``make-dataset`` stores the albedo the "real" frames
were rendered with (``triton_s2r.tabletop.hidden``). This is what ``export-textures`` promises a simulator
user: textures that look like the real surfaces.

Definition (``texture_psnr``), per label l:

1. Both textures at R x R in the model's layout (rows u, columns v): the learned one baked
   (``Translator.bake_textures``), the hidden one area-resampled from its image.
2. Only texels that some frame shows count: those hit by a pixel of label l (texel of its UV) in the
   G-buffers given (``seen_texels``; eval passes the paired split and the sequences). Surfaces no camera
   sees (under the table, a block's bottom) have no right answer to learn.
3. A per-label affine colour map (3 x 3 matrix and offset, 12 numbers) fitted by least squares over those
   texels maps learned to hidden colours, and its output is clamped to [0, 1]. The learned texture feeds a
   generator, so its colours need only be an affine function of the true ones: the fit forgives a global
   colour transform (white balance, exposure, channel mixing) but nothing spatial, so blurred or missing
   detail still costs.
4. PSNR = 10 log10(1 / MSE) over the seen texels and RGB channels, capped at 100 dB (a perfect texture).

``texture_psnr`` in eval's JSON is the mean over the labels that have seen texels.

``texture_colour_psnr`` is the same with step 3 replaced by ONE affine map for all labels together (each label
weighing equally in its fit): it forgives a global colour transform, but not labels whose colours are wrong
relative to each other, so it also asks whether each texture carries its surface's own colour. A texture that
holds each label's true mean colour and nothing else scores about ``texture_psnr``'s constant level. The shared
map still fits any K distinct colours part of the way, so the level to beat is chance, ``shuffled_colour_level``:
the labels' true mean colours, each given to a label drawn at random.
"""

from __future__ import annotations

import cv2
import numpy as np
import torch
from torch import Tensor

from triton_s2r.data.datasets import BenchmarkDataset, DatasetError, read_photo
from triton_s2r.render.gbuffer import VOID, GBuffer
from triton_s2r.tabletop.hidden import albedo_path

MAX_PSNR = 100.0
#: Why ``texture_psnr`` is null for a dataset without the hidden textures.
NO_HIDDEN = ("the dataset has no hidden albedo textures (built before they were stored); rebuild it with "
             "`triton-s2r make-dataset` to score texture recovery")


def read_hidden_albedo(dataset: BenchmarkDataset, resolution: int) -> Tensor | None:
    """The hidden albedo of every label, resampled to the model's texture layout.

    Args:
        dataset: a benchmark dataset.
        resolution: R, texels per side.

    Returns:
        (K, 3, R, R) float32 in [0, 1], entry l - 1 for label l, rows following u and columns v (as
        ``Translator.bake_textures``); None when the dataset has none (``dataset.yaml`` has no ``hidden``).

    Raises:
        DatasetError: the manifest lists them but a file is missing or unreadable.
    """
    if "hidden" not in dataset.manifest:
        return None
    textures = []
    for name in dataset.labels.names:
        path = albedo_path(dataset.root, name)
        if not path.is_file():
            raise DatasetError(f"{path}: hidden albedo listed in {dataset.root / 'dataset.yaml'} but missing; rerun "
                               f"`triton-s2r make-dataset` with the same arguments to write it")
        image = read_photo(path).permute(1, 2, 0).numpy()  # (H, W, 3), row 0 = v 1, column = u
        image = cv2.resize(image, (resolution, resolution), interpolation=cv2.INTER_AREA)
        # Image rows run down from v = 1: flip them so the index grows with v, then put u on the rows.
        textures.append(torch.from_numpy(np.ascontiguousarray(image[::-1].transpose(1, 0, 2))).permute(2, 0, 1))
    return torch.stack(textures).clamp(0, 1)


def seen_texels(gbuffer: GBuffer, num_labels: int, resolution: int) -> Tensor:
    """Texels that some pixel shows: the texel containing each non-void pixel's UV, per label.

    Args:
        gbuffer: frames with ``uv`` (B, 2, H, W) in [0, 1] and ``label`` (B, H, W) in 0..K.
        num_labels: K.
        resolution: R, texels per side.

    Returns:
        (K, R, R) bool in the model's layout (rows u, columns v).
    """
    label = gbuffer.label.flatten()
    shown = label != VOID
    row = (gbuffer.uv[:, 0].flatten()[shown] * resolution).long().clamp(0, resolution - 1)
    col = (gbuffer.uv[:, 1].flatten()[shown] * resolution).long().clamp(0, resolution - 1)
    index = (label[shown] - 1) * resolution * resolution + row * resolution + col
    counts = torch.bincount(index, minlength=num_labels * resolution * resolution)
    return (counts > 0).view(num_labels, resolution, resolution)


def affine_colour_fit(learned: Tensor, hidden: Tensor, weight: Tensor | None = None) -> Tensor:
    """The least-squares affine map of ``learned`` colours onto ``hidden`` ones, applied and clamped.

    Args:
        learned: (N, 3) float colours.
        hidden: (N, 3) float colours in [0, 1], the targets.
        weight: (N,) float > 0, each colour's weight in the fit; None: all equal.

    Returns:
        (N, 3) float32 in [0, 1]: ``clamp([learned, 1] @ A)`` with the 4 x 3 ``A`` minimising
        ``sum weight * ||[learned, 1] @ A - hidden||²`` (minimum-norm solution when ``learned`` is degenerate,
        e.g. constant: then the fit is the weighted mean hidden colour).
    """
    design = torch.cat([learned.double(), torch.ones_like(learned[:, :1], dtype=torch.float64)], dim=1)
    root = torch.ones_like(design[:, :1]) if weight is None else weight.double().sqrt()[:, None]
    solution = torch.linalg.lstsq(design * root, hidden.double() * root, driver="gelsd").solution  # (4, 3)
    return (design @ solution).clamp(0, 1).float()


def _check_shapes(learned: Tensor, hidden: Tensor, seen: Tensor) -> None:
    if learned.shape != hidden.shape or learned.shape[1] != 3 or seen.shape != (learned.shape[0], *learned.shape[2:]):
        raise ValueError(f"texture recovery: learned {tuple(learned.shape)} and hidden {tuple(hidden.shape)} must both "
                         f"be (K, 3, R, R), seen (K, R, R), got {tuple(seen.shape)}")


def _seen_colours(textures: Tensor, seen: Tensor, label: int) -> Tensor:
    """(N, 3) colours of label ``label``'s seen texels, from (K, 3, R, R) ``textures`` and (K, R, R) ``seen``."""
    return textures[label].permute(1, 2, 0)[seen[label]]


def _psnr(fitted: Tensor, target: Tensor) -> float:
    """PSNR of (N, 3) colours in [0, 1], capped at ``MAX_PSNR``."""
    mse = (fitted.double() - target.double()).pow(2).mean()
    return min(MAX_PSNR, float(10 * torch.log10(1 / mse))) if mse > 0 else MAX_PSNR


def texture_psnr(learned: Tensor, hidden: Tensor, seen: Tensor) -> Tensor:
    """Per-label PSNR of the learned texture against the hidden albedo, after a per-label affine colour fit.

    Args:
        learned: (K, 3, R, R) float in [0, 1], rows u, columns v (``Translator.bake_textures``).
        hidden: (K, 3, R, R) float in [0, 1], same layout (``read_hidden_albedo``).
        seen: (K, R, R) bool, the texels that count (``seen_texels``).

    Returns:
        (K,) float32 dB in [0, 100]; NaN for labels with no seen texel.
    """
    _check_shapes(learned, hidden, seen)
    values = []
    for label in range(learned.shape[0]):
        if not seen[label].any():
            values.append(float("nan"))
            continue
        target = _seen_colours(hidden, seen, label)
        values.append(_psnr(affine_colour_fit(_seen_colours(learned, seen, label), target), target))
    return torch.tensor(values, dtype=torch.float32)


def texture_colour_psnr(learned: Tensor, hidden: Tensor, seen: Tensor) -> Tensor:
    """Per-label PSNR of the learned texture against the hidden albedo, after ONE affine colour fit for all labels.

    Args and returns as ``texture_psnr``; each label's seen texels weigh 1 / their number in the shared fit, so
    that every label counts equally whatever its size.
    """
    _check_shapes(learned, hidden, seen)
    shown = [label for label in range(learned.shape[0]) if seen[label].any()]
    values = torch.full((learned.shape[0],), float("nan"))
    if not shown:
        return values
    learned_colours = [_seen_colours(learned, seen, label) for label in shown]  # (N_l, 3) each
    targets = [_seen_colours(hidden, seen, label) for label in shown]
    weight = torch.cat([torch.full((len(colours),), 1.0 / len(colours)) for colours in learned_colours])
    fitted = affine_colour_fit(torch.cat(learned_colours), torch.cat(targets), weight).split(
        [len(colours) for colours in learned_colours])
    for label, fit, target in zip(shown, fitted, targets, strict=True):
        values[label] = _psnr(fit, target)
    return values


def shuffled_colour_level(hidden: Tensor, seen: Tensor, draws: int = 20, seed: int = 0) -> float:
    """Chance level of ``texture_colour_psnr``: real colours on the wrong surfaces.

    Textures that hold the labels' true mean colours (over their seen texels), shuffled among the labels that
    have seen texels by ``draws`` seeded random permutations; the mean of their mean ``texture_colour_psnr``.

    Args:
        hidden: (K, 3, R, R) float in [0, 1] (``read_hidden_albedo``).
        seen: (K, R, R) bool (``seen_texels``).
        draws: permutations averaged.
        seed: seeds the permutations.

    Returns:
        dB; NaN when no label has a seen texel.
    """
    shown = [label for label in range(hidden.shape[0]) if seen[label].any()]
    if not shown:
        return float("nan")
    means = torch.stack([_seen_colours(hidden, seen, label).mean(0) for label in shown])  # (S, 3)
    generator = torch.Generator().manual_seed(seed)
    scores = []
    for _ in range(draws):
        shuffled = torch.full_like(hidden[:, :, :1, :1], 0.5)  # (K, 3, 1, 1); labels never seen do not count
        shuffled[shown] = means[torch.randperm(len(shown), generator=generator)][:, :, None, None]
        scores.append(texture_colour_psnr(shuffled.expand_as(hidden), hidden, seen).nanmean())
    return float(torch.stack(scores).mean())
