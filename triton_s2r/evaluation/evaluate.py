"""``triton-s2r eval``: fidelity, perceptual similarity, flicker and texture recovery, with no downloaded weights.

The frames scored come from a run (``eval RUN_DIR DATASET``: the run translates the dataset's UVL frames) or
from any translator (``eval FRAMES_DIR DATASET``: a folder laid out like the dataset's real frames,
``FRAMES_DIR/test/000000.png``, ``FRAMES_DIR/sequences/seq_000/000000.png``, ..., e.g. CycleGAN, CUT or
video-diffusion outputs of the same UVL frames). A run directory holds ``config.yaml``; a frames folder holds
the paired split's folder (``test/``).

Fidelity on the paired split (frame vs the path-traced real frame of the same state): PSNR and SSIM, over
whole frames and over objects and robot only (no table, no void: the paper's "masked" columns), PSNR per
label (``psnr_by_label``, void included: where fidelity is won or lost), and HaarPSI
(``triton_s2r.evaluation.haarpsi``), a perceptual similarity that blur cannot fool, whole frame (``haarpsi``)
and objects and robot only (``haarpsi_masked``: outside the mask the frame is replaced by the real one and the
pooling counts mask pixels only). Colour error (``colour_error_by_label``, ``colour_error_masked`` over objects
and robot): how far each label's mean colour is from the real one's, which tells a wrong colour from a blurred
or misplaced pattern; ``colour_error_assigned_by_label`` and ``colour_error_assigned_masked`` score it with the labels
whose objects are copies of one shape (``interchangeable_labels``, from the dataset's scene) matched to the real
labels of their group that fit best (``colour_assignment``), since unpaired training cannot know which copy is
which. Contrast ratio (``contrast_ratio_by_label``, ``contrast_ratio_masked``): how much each
label stands out from its surroundings in the translation, as a fraction of how much it does in the real frame;
near 0 where objects fade into what is around them, which neither PSNR nor colour error shows. Detail ratio
(``detail_ratio_by_label``, ``detail_ratio_masked``): how much each label's colours vary within it (patterns,
letters, grain), as a fraction of how much they do in the real frame; near 0 for flat or blurred blobs.
Consistency on every video sequence: surface consistency (per-texel colour spread across the frames that
see the texel, in UV space) and warp error (colour change between consecutive frames at pixels that see
the same surface point, from the exact label and UV correspondence), each also for the real frames: reality's
own level from lighting and shading, the level to reach. See ``triton_s2r.evaluation.metrics`` for the
definitions.
Texture recovery (runs only): each label's learned texture against the benchmark's hidden albedo after a
per-label affine colour fit, ``texture_psnr`` and ``texture_psnr_by_label``
(``triton_s2r.evaluation.texture_recovery``); for any source, ``texture_psnr_constant``, the score of a texture
constant on each label (each label's mean albedo), the level a learned texture has to beat. ``texture_colour_psnr``
fits one affine colour map for all labels instead, so it also asks whether each texture has its own surface's
colour; ``texture_colour_psnr_shuffled`` scores the labels' true mean colours shuffled among the labels, the chance
level to beat there, while a texture that holds each label's true mean colour alone reaches about
``texture_psnr_constant``.
Real-frame labelling (runs only): how the run's real->sim translator labels the paired real frames against
their true labels, intersection over union per label (``real_label_iou_by_label``, void included) and over
objects and robot (``real_label_iou_masked``): the real -> sim -> real cycle can tie an object to its real
colour only where this labelling finds the object.

FID, KID and LPIPS need pretrained network weights, which nothing here downloads; they are reported as
absent (``null``) with the reason, as is every other key that does not apply (under ``absent``).
"""

from __future__ import annotations

import datetime
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import torch
from scipy.optimize import linear_sum_assignment
from torch import Tensor
from tqdm import tqdm

from triton_s2r.data.datasets import PHOTO_SUFFIXES, BenchmarkDataset, DatasetError, read_photo
from triton_s2r.evaluation import metrics, texture_recovery
from triton_s2r.inference.translator import Translator
from triton_s2r.render.gbuffer import GBuffer
from triton_s2r.render.scene import load_scene
from triton_s2r.runs.run_dir import CONFIG, RunDir
from triton_s2r.utils.files import atomic_write

ABSENT = "needs pretrained network weights, which triton_s2r never downloads; not computed"
NO_TEXTURE = "a frames folder has no learned texture; texture recovery needs a run directory"
NO_MODEL = "a frames folder has no real->sim translator; how it labels the real frames needs a run directory"
NO_SEQUENCES = "the frames folder has no sequences/ folder; translate the dataset's sequences for these"
#: Frames per HaarPSI call (it works in float64): bounds memory on the full preset.
_HAARPSI_CHUNK = 16

#: Frames of one split, given its G-buffers (a batch) and their indices: (n, 3, H, W) float32 in [0, 1], CPU.
FrameSource = Callable[[str, GBuffer, range], Tensor]


def source_kind(source: Path, split: str) -> str:
    """``"run"`` (``config.yaml`` inside) or ``"frames"`` (a ``split`` folder inside); else a clear error."""
    if RunDir(source).config_path.is_file():
        return "run"
    if (source / split).is_dir():
        return "frames"
    raise FileNotFoundError(f"{source}: neither a run directory (no {CONFIG}, which `triton-s2r train` writes) "
                            f"nor a frames folder (no {split}/ with frames named like the dataset's real frames, "
                            f"{split}/000000.png, ...)")


def frame_file(folder: Path, index: int) -> Path | None:
    """The image of frame ``index`` in ``folder`` (``NNNNNN`` with a PNG or JPEG suffix), None if absent."""
    return next((p for p in (folder / f"{index:06d}{suffix}" for suffix in PHOTO_SUFFIXES) if p.is_file()), None)


def run_frames(translator: Translator) -> FrameSource:
    """The run's translations of each batch of G-buffers."""

    def translate(_: str, gbuffer: GBuffer, __: range) -> Tensor:
        return translator(gbuffer).translation.cpu()

    return translate


def folder_frames(frames_dir: Path, dataset: BenchmarkDataset) -> FrameSource:
    """Read a translator's frames from ``frames_dir/<split>/NNNNNN.png``, checking names and sizes."""
    size = dataset.resolution

    def read(split: str, _: GBuffer, indices: range) -> Tensor:
        images = []
        for i in indices:
            path = frame_file(frames_dir / split, i)
            if path is None:
                raise DatasetError(f"{frames_dir / split / f'{i:06d}.png'}: frame missing; a frames folder holds one "
                                   f"image per real frame of {dataset.root / split / 'real'}, with the same names")
            image = read_photo(path)
            if tuple(image.shape[1:]) != size:
                raise DatasetError(f"{path}: frame is {image.shape[1]}x{image.shape[2]} (HxW) but the dataset's frames "
                                   f"are {size[0]}x{size[1]}; translate at the dataset's resolution or resize the "
                                   f"frames to it")
            images.append(image)
        return torch.stack(images)

    return read


def _check_frames_folder(frames_dir: Path, dataset: BenchmarkDataset, splits: list[str]) -> None:
    """Raise naming the first missing frame and how many are missing, before any scoring."""
    for split in splits:
        count = dataset.splits[split]["frames"]
        missing = [i for i in range(count) if frame_file(frames_dir / split, i) is None]
        if missing:
            raise DatasetError(f"{frames_dir / split}: {len(missing)} of {count} frames missing (first: "
                               f"{missing[0]:06d}.png); a frames folder holds one image per real frame of "
                               f"{dataset.root / split / 'real'}, with the same names")


def _load_split(source: FrameSource, dataset: BenchmarkDataset, split: str, batch_size: int,
                progress: bool) -> tuple[Tensor, GBuffer, Tensor]:
    """Scored frames (N, 3, H, W) in [0, 1], G-buffers and real frames (N, 3, H, W) of a paired split (CPU)."""
    uvl, photos = dataset.uvl_frames(split), dataset.photos(split)
    frames, gbuffers, reals = [], [], []
    for start in tqdm(range(0, len(uvl), batch_size), desc=f"eval {split}", disable=not progress):
        idx = range(start, min(start + batch_size, len(uvl)))
        gbuffer = GBuffer.cat([uvl[i] for i in idx])
        frames.append(source(split, gbuffer, idx))
        gbuffers.append(gbuffer)
        reals.append(torch.stack([photos[i] for i in idx]))
    return torch.cat(frames), GBuffer.cat(gbuffers), torch.cat(reals)


def _haarpsi(frames: Tensor, real: Tensor, mask: Tensor | None = None) -> float:
    """Mean HaarPSI over frames, computed in chunks."""
    values = [metrics.haarpsi(frames[i:i + _HAARPSI_CHUNK], real[i:i + _HAARPSI_CHUNK],
                              mask=None if mask is None else mask[i:i + _HAARPSI_CHUNK], reduction="none")
              for i in range(0, frames.shape[0], _HAARPSI_CHUNK)]
    return float(torch.cat(values).mean())


def _per_label(values: Tensor, names: list[str], exclude: list[int], key: str) -> dict:
    """``{key}_by_label`` from (K + 1,) values (void included; None where NaN) and ``{key}_masked``.

    ``{key}_masked`` is the mean of the per-label values over the objects and robot (not void, not ``exclude``)
    that have one: each object counts once, whatever its size on screen.
    """
    by_label = _named(values, names)
    shown = [v for i, v in enumerate(by_label.values()) if i != 0 and i not in exclude and v is not None]
    return {f"{key}_by_label": by_label, f"{key}_masked": sum(shown) / len(shown) if shown else None}


def _colour_errors(matrix: Tensor, groups: list[tuple[int, ...]], names: list[str], exclude: list[int]) -> dict:
    """``colour_error_*`` and, where copies of one shape are open to any assignment, ``colour_error_assigned_*``.

    ``matrix``: (K + 1, K + 1) from ``metrics.colour_error_matrix``; ``groups``: label ids of interchangeable
    labels (``Scene.interchangeable_labels``). The assigned error matches each group's labels one to one with
    the group's real labels so that their summed error is least (Hungarian method); other labels keep their own.
    """
    assigned = matrix.diagonal().clone()
    assignment: dict[str, str] = {}
    for group in groups:
        shown = [i for i in group if not matrix[i, i].isnan()]
        cost = matrix[shown][:, shown].nan_to_num(nan=1.0)  # no frame shows both: the largest error counts
        for row, column in zip(*linear_sum_assignment(cost.numpy()), strict=True):
            assigned[shown[row]] = matrix[shown[row], shown[column]]
            assignment[names[shown[row]]] = names[shown[column]]
    return {**_per_label(matrix.diagonal(), names, exclude, "colour_error"),
            **_per_label(assigned, names, exclude, "colour_error_assigned"),
            "colour_assignment": assignment,
            "interchangeable_labels": [[names[i] for i in group] for group in groups]}


def _ratio(measure: Callable[[Tensor, Tensor, int], Tensor], translation: Tensor, real: Tensor, label: Tensor,
           num_labels: int) -> Tensor:
    """(K + 1,) ``measure`` of the translation over that of the real frames; NaN where the real frames' is 0."""
    ours, theirs = measure(translation, label, num_labels), measure(real, label, num_labels)
    return torch.where(theirs > 0, ours / theirs, torch.nan)


def _named(values: Tensor, names: Sequence[str]) -> dict[str, float | None]:
    """Per name, the value of the same index in (N,) ``values``; None where it is NaN."""
    return {name: None if value.isnan() else float(value) for name, value in zip(names, values, strict=True)}


def _mean_by_label(values: list[Tensor], names: Sequence[str]) -> dict[str, float | None]:
    """Per label name: the mean over sequences of (K,) values, NaN entries skipped; None if all are NaN."""
    if not values:
        return {name: None for name in names}
    stacked = torch.stack(values)  # (S, K)
    mean = stacked.nan_to_num().sum(0) / (~stacked.isnan()).sum(0)  # 0 / 0 = NaN where a label is never seen
    return _named(mean, names)


def _texture_recovery(translator: Translator | None, dataset: BenchmarkDataset, gbuffer: GBuffer,
                      resolution: int) -> tuple[dict, dict[str, str]]:
    """Eval's texture-recovery keys and why any of them is null.

    The keys: ``texture_psnr``, ``texture_psnr_by_label`` and ``texture_colour_psnr`` (the run's learned textures;
    null without a translator), ``texture_psnr_constant`` (a texture constant on each label) and
    ``texture_colour_psnr_shuffled`` (the labels' true colours on random labels); all null without hidden albedo.
    """
    names = list(dataset.labels.names)
    result: dict = {"texture_psnr": None, "texture_psnr_by_label": {name: None for name in names},
                    "texture_psnr_constant": None, "texture_colour_psnr": None, "texture_colour_psnr_shuffled": None}
    hidden = texture_recovery.read_hidden_albedo(dataset, resolution)
    if hidden is None:
        keys = ("texture_psnr", "texture_psnr_constant", "texture_colour_psnr", "texture_colour_psnr_shuffled")
        return result, {key: texture_recovery.NO_HIDDEN for key in keys}
    seen = texture_recovery.seen_texels(gbuffer, len(names), resolution)
    # A texture constant on each label: the affine fit makes it the label's mean hidden colour.
    result["texture_psnr_constant"] = _mean_shown(texture_recovery.texture_psnr(torch.zeros_like(hidden), hidden, seen))
    result["texture_colour_psnr_shuffled"] = texture_recovery.shuffled_colour_level(hidden, seen)
    if translator is None:
        return result, {"texture_psnr": NO_TEXTURE, "texture_colour_psnr": NO_TEXTURE}
    learned = translator.bake_textures(resolution).cpu()
    by_label = texture_recovery.texture_psnr(learned, hidden, seen)
    result["texture_psnr"] = _mean_shown(by_label)
    result["texture_psnr_by_label"] = _named(by_label, names)
    result["texture_colour_psnr"] = _mean_shown(texture_recovery.texture_colour_psnr(learned, hidden, seen))
    return result, {}


def _mean_shown(by_label: Tensor) -> float | None:
    """Mean of the labels' values that are not NaN (None when all are)."""
    shown = by_label[~by_label.isnan()]
    return float(shown.mean()) if shown.numel() else None


def evaluate(
    source: str | os.PathLike,
    dataset_dir: str | os.PathLike,
    *,
    split: str = "test",
    checkpoint: str | None = None,
    device: str = "auto",
    batch_size: int = 16,
    grid_size: int = 128,
    texture_resolution: int = 256,
    progress: bool = True,
) -> dict:
    """Compute the metrics of a run, or of a folder of translated frames, on a dataset.

    Args:
        source: run written by ``triton-s2r train`` (holds ``config.yaml``), or a frames folder laid out like
            the dataset's real frames (``<split>/NNNNNN.png``, ``sequences/seq_NNN/NNNNNN.png``; PNG or JPEG,
            the dataset's resolution).
        dataset_dir: benchmark dataset (its ``split`` must hold both uvl/ and real/ frames).
        split: the paired split for PSNR, SSIM and HaarPSI.
        checkpoint: checkpoint name or file of a run (default: the last).
        device: ``auto``, ``cpu``, ``cuda``, ``cuda:N`` (runs).
        batch_size: frames per model call.
        grid_size: texels per side of the UV grids of the consistency metrics.
        texture_resolution: texels per side at which learned and hidden textures are compared.
        progress: show progress bars.

    Returns:
        The metrics (floats, None where they do not apply, with the reason under ``absent``) and where they
        came from; see the module docstring.

    Raises:
        FileNotFoundError: ``source`` is neither a run directory nor a frames folder.
        DatasetError: a frames folder misses frames or holds frames of the wrong size.
    """
    source = Path(source)
    dataset = BenchmarkDataset.open(dataset_dir)
    if not dataset.is_paired(split):
        raise ValueError(f"{dataset.root}: split {split!r} is not a paired split (uvl/ and real/); "
                         f"paired splits: {[s for s in dataset.splits if dataset.is_paired(s)]}")
    kind = source_kind(source, split)
    sequences = sorted(s for s in dataset.splits if s.startswith("sequences/"))
    absent = {"fid": ABSENT, "kid": ABSENT, "lpips": ABSENT}
    translator = None
    if kind == "run":
        translator = Translator.from_run_dir(source, checkpoint=checkpoint, device=device)
        if dataset.labels.num_labels != translator.num_labels:
            raise ValueError(f"{dataset.root} has {dataset.labels.num_labels} labels but the run's model "
                             f"{translator.num_labels}: evaluate on the dataset the run was trained for")
        frame_source = run_frames(translator)
    else:
        if not (source / "sequences").is_dir():
            sequences = []
        _check_frames_folder(source, dataset, [split, *sequences])
        frame_source = folder_frames(source, dataset)
    exclude = [dataset.labels.id_of("table")] if "table" in dataset.labels.names else []

    interchangeable = load_scene(dataset.scene_file).interchangeable_labels()
    translation, gbuffer, real = _load_split(frame_source, dataset, split, batch_size, progress)
    objects = metrics.object_mask(gbuffer.label, exclude=exclude)
    keep = objects.flatten(1).any(1)  # frames with no object pixel have no masked score
    label_names = ["void", *dataset.labels.names]
    result = {
        "psnr": float(metrics.psnr(translation, real)),
        "ssim": float(metrics.ssim(translation, real)),
        "psnr_masked": float(metrics.psnr(translation[keep], real[keep], mask=objects[keep])),
        "ssim_masked": float(metrics.ssim(translation[keep], real[keep], mask=objects[keep])),
        "haarpsi": _haarpsi(translation, real),
        "haarpsi_masked": _haarpsi(translation[keep], real[keep], objects[keep]),
        "psnr_by_label": _named(metrics.psnr_by_label(translation, real, gbuffer.label, dataset.labels.num_labels),
                                label_names),
        **_colour_errors(metrics.colour_error_matrix(translation, real, gbuffer.label, len(label_names) - 1),
                         interchangeable, label_names, exclude),
        **_per_label(_ratio(metrics.contrast_by_label, translation, real, gbuffer.label, dataset.labels.num_labels),
                     label_names, exclude, "contrast_ratio"),
        **_per_label(_ratio(metrics.detail_by_label, translation, real, gbuffer.label, dataset.labels.num_labels),
                     label_names, exclude, "detail_ratio"),
        "n_frames": int(translation.shape[0]),
    }

    consistency = {"surface_consistency": [], "surface_consistency_real": [], "warp_error": [], "warp_error_real": []}
    warp_by_label = {"": [], "_real": []}  # per sequence: (K,) with NaN where a label is not counted
    n_sequence_frames = 0
    gbuffers_seen = [gbuffer]
    num_labels = dataset.labels.num_labels
    for name in sequences:
        frames, g, photos = _load_split(frame_source, dataset, name, batch_size, progress)
        n_sequence_frames += frames.shape[0]
        gbuffers_seen.append(g)
        for key, images in (("", frames), ("_real", photos)):
            consistency[f"surface_consistency{key}"].append(
                float(metrics.surface_consistency(images, g, num_labels, grid_size)))
            consistency[f"warp_error{key}"].append(float(metrics.warp_error(images, g, grid_size)))
            warp_by_label[key].append(metrics.warp_error_by_label(images, g, num_labels, grid_size))
    result.update({k: sum(v) / len(v) if v else None for k, v in consistency.items()})
    for key, values in warp_by_label.items():
        result[f"warp_error_by_label{key}"] = _mean_by_label(values, dataset.labels.names)
    if kind == "frames" and not sequences and any(s.startswith("sequences/") for s in dataset.splits):
        absent.update({k: NO_SEQUENCES for k in consistency})

    if translator is not None:
        labelled = translator.label_photos(real).cpu()
        result.update(_per_label(metrics.label_iou(labelled, gbuffer.label, num_labels), label_names, exclude,
                                 "real_label_iou"))
    else:
        result.update({"real_label_iou_by_label": {name: None for name in label_names}, "real_label_iou_masked": None})
        absent.update({"real_label_iou_by_label": NO_MODEL, "real_label_iou_masked": NO_MODEL})
    texture, why = _texture_recovery(translator, dataset, GBuffer.cat(gbuffers_seen), texture_resolution)
    absent.update(why)
    result.update({
        **texture,
        "n_sequences": len(sequences),
        "n_sequence_frames": n_sequence_frames,
        "fid": None, "kid": None, "lpips": None,
        "absent": absent,
        "source": kind,
        "dataset": str(Path(dataset_dir).resolve()),
        "split": split,
        "run_dir": str(source.resolve()) if kind == "run" else None,
        "frames_dir": str(source.resolve()) if kind == "frames" else None,
        "checkpoint": (checkpoint or "last") if kind == "run" else None,
        "grid_size": grid_size,
        "texture_resolution": texture_resolution,
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
    })
    return result


def write_metrics(result: dict, out: str | os.PathLike) -> Path:
    """Write the metrics as JSON, atomically."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(out) as tmp:
        tmp.write_text(json.dumps(result, indent=2) + "\n")
    return out
