"""Weight-free evaluation metrics: fidelity (PSNR, SSIM, HaarPSI) and temporal consistency (docs/method.md §7).

Fidelity compares a translation with its paired real photo, over the whole image or over ``object_mask``
(objects and robot only: no table, no void; the paper's "masked" columns, §7.1). Unlike the paper, which
zeroes the table and still counts the zeros, the masked metrics here average over mask pixels only.
HaarPSI (perceptual, blur lowers it; ``triton_s2r.evaluation.haarpsi``) is re-exported here.

Temporal consistency needs no real photo: correspondence between frames of one video sequence comes from
the G-buffer, since pixels with the same label and UV see the same surface point (the convention of ℓUC,
docs/method.md §4.3). ``surface_consistency`` is ℓUC taken over a sequence instead of a batch;
``warp_error`` is a flicker measure between consecutive frames, each warped onto the next with the exact
motion of the G-buffers (``triton_s2r.evaluation.flow``). ``surface_consistency`` resamples colours through
per-label D×D texel grids, so for a texture that varies within a texel it carries an interpolation error
bounded by the texture's UV gradient times 1/D: detail the translation draws raises it, however steady. The
real frames are scored alongside as the level to reach.

All images are (B, 3, H, W) float in [0, 1] (data range 1). Functions return 0-dim float32 tensors;
call ``.item()`` for JSON.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
import torch.nn.functional as F
from torch import Tensor
from torchmetrics.functional.image import structural_similarity_index_measure

from triton_s2r.evaluation.flow import sample_at, source_positions
from triton_s2r.evaluation.haarpsi import haarpsi as haarpsi  # re-exported: every eval metric is reachable from here
from triton_s2r.models.texture_space import check_labels, unproject_to_texels
from triton_s2r.render.gbuffer import VOID, GBuffer

# Frames splatted (or masked, contrast_by_label) at once: bounds memory at about chunk·K·4·D² floats (16·9·4·128²
# ≈ 38 MB), or chunk·K·H·W doubles per mask.
_CHUNK = 16


def object_mask(label: Tensor, exclude: Iterable[int] = ()) -> Tensor:
    """Pixels of the objects and robot: label not void and not in ``exclude``.

    Example: ``object_mask(gbuffer.label, exclude=[labels.id_of("table")])`` gives the paper's masked
    columns.

    Args:
        label: (B, H, W) int64 label ids, 0 = void.
        exclude: label ids to leave out as well, e.g. the table's.

    Returns:
        (B, H, W) bool, True on kept pixels.
    """
    excluded = torch.tensor(sorted(set(exclude)), dtype=label.dtype, device=label.device)
    return (label != VOID) & ~torch.isin(label, excluded)


def psnr(
    pred: Tensor, target: Tensor, mask: Tensor | None = None, max_psnr: float = 100.0, reduction: str = "mean"
) -> Tensor:
    """Peak signal-to-noise ratio, 10·log10(1 / MSE), per image and averaged over the batch.

    The MSE of each image is taken over its pixels (only those in ``mask`` if given) and channels.
    Identical images (MSE 0) score exactly ``max_psnr``, and no image scores more, so the result is
    never inf or NaN. The batch mean is of per-image PSNRs, not the PSNR of the mean MSE.

    Args:
        pred: (B, C, H, W) float in [0, 1], e.g. translated frames.
        target: (B, C, H, W) float in [0, 1], the paired real photos.
        mask: (B, H, W) bool pixels to score (e.g. ``object_mask``); None = all. Pixels outside the mask
            have no influence.
        max_psnr: cap in dB.
        reduction: ``"mean"`` over the batch, or ``"none"`` for per-image values (to average over a
            whole split with batches of unequal size).

    Returns:
        float32 dB in (-inf, max_psnr] (>= 0 for images in [0, 1]): 0-dim for ``"mean"``, (B,) for
        ``"none"``.

    Raises:
        ValueError: shapes differ, or some image has an empty mask (drop such frames first, e.g. with
            ``mask.flatten(1).any(1)``), or an unknown reduction.
    """
    _check_pair(pred, target, mask)
    squared = (pred.double() - target.double()).pow(2).sum(dim=1)  # (B, H, W), summed over channels
    if mask is None:
        mse = squared.flatten(1).mean(dim=1) / pred.shape[1]
    else:
        count = mask.flatten(1).sum(dim=1)
        mse = (squared * mask).flatten(1).sum(dim=1) / (count * pred.shape[1])
    # 1/mse = inf for identical images; the clamp turns that into exactly max_psnr.
    value = (10.0 * torch.log10(1.0 / mse)).clamp(max=max_psnr).float()
    return _reduce(value, reduction)


def psnr_by_label(pred: Tensor, target: Tensor, label: Tensor, num_labels: int) -> Tensor:
    """``psnr`` over each label's pixels, averaged over the frames that show the label: where fidelity is won or lost.

    Args:
        pred: (B, C, H, W) float in [0, 1], e.g. translated frames.
        target: (B, C, H, W) float in [0, 1], the paired real photos.
        label: (B, H, W) int64 label ids, 0 = void, 1..K.
        num_labels: K.

    Returns:
        (K + 1,) float32 dB, entry l for label id l (entry 0: void); NaN where no frame shows l.
    """
    values = torch.full((num_labels + 1,), float("nan"), device=pred.device)
    for i in range(num_labels + 1):
        mask = label == i
        shown = mask.flatten(1).any(1)
        if shown.any():
            values[i] = psnr(pred[shown], target[shown], mask=mask[shown])
    return values


def ssim(pred: Tensor, target: Tensor, mask: Tensor | None = None, reduction: str = "mean") -> Tensor:
    """Structural similarity (Wang et al. 2004): 11×11 Gaussian window, sigma 1.5, data range 1.

    The SSIM map comes from torchmetrics' functional SSIM (reflect padding at the image border, so the
    map covers every pixel). Per image it is averaged over channels and over all pixels, or over the
    mask pixels only. With a mask, pixels outside it are set to 0 in *both* images before filtering,
    so they cannot influence the score: windows that straddle the mask edge see identical zeros there.
    With an all-True mask the result equals the unmasked one.

    Args:
        pred: (B, C, H, W) float in [0, 1]; H, W >= 6.
        target: (B, C, H, W) float in [0, 1].
        mask: (B, H, W) bool pixels to score; None = all.
        reduction: ``"mean"`` over the batch or ``"none"`` for per-image values.

    Returns:
        float32 in [-1, 1], 1 for identical images: 0-dim for ``"mean"``, (B,) for ``"none"``; computed in
        float32 also under autocast.

    Raises:
        ValueError: shapes differ, some image has an empty mask, or an unknown reduction.
    """
    _check_pair(pred, target, mask)
    pred, target = pred.float(), target.float()
    if mask is not None:
        keep = mask.unsqueeze(1).to(pred.dtype)
        pred, target = pred * keep, target * keep
    # float32 even inside a bf16 autocast region (validation during mixed-precision training): SSIM's
    # variances cancel catastrophically when its Gaussian filtering runs in bf16.
    with torch.autocast(device_type=pred.device.type, enabled=False):
        _, ssim_map = structural_similarity_index_measure(
            pred, target, gaussian_kernel=True, sigma=1.5, kernel_size=11, data_range=1.0, reduction="none",
            return_full_image=True,
        )
    if ssim_map.shape != pred.shape:  # guards against a torchmetrics release that crops the map
        raise RuntimeError(f"torchmetrics returned an SSIM map of shape {tuple(ssim_map.shape)}, "
                           f"expected {tuple(pred.shape)}")
    if mask is None:
        value = ssim_map.flatten(1).mean(dim=1)
    else:
        value = (ssim_map * keep).flatten(1).sum(dim=1) / (mask.flatten(1).sum(dim=1) * pred.shape[1])
    return _reduce(value, reduction)


def surface_consistency(frames: Tensor, gbuffer: GBuffer, num_labels: int, grid_size: int = 128) -> Tensor:
    """How much each surface point's colour varies over one video sequence (lower is better).

    ℓUC over a sequence (docs/method.md §4.3, without colour normalisation or ε): every frame is splatted
    bilinearly into its labels' D×D UV grids (``unproject_to_texels``), giving a per-frame texel colour
    ω_t and splat weight w_t. Per texel and channel, the std across frames is weighted by w_t
    (population std, frames with w_t = 0 do not count); it is averaged over channels and over the texels
    seen in at least 2 frames. Void pixels are ignored.

    Frames rendered from a fixed texture score 0 when the pixels sample texel centres; otherwise each ω_t
    is a convex combination of colours within 1/D of the texel centre in u and v, so the score is at most
    (max |∂c/∂u| + max |∂c/∂v|) / D for a texture c(label, u, v) that does not change over time.

    Args:
        frames: (T, C, H, W) float in [0, 1], one sequence in time order, T >= 2.
        gbuffer: the sequence's G-buffer, batch size T, same H, W.
        num_labels: K, object labels 1..K (void excluded).
        grid_size: D, texels per side of each label's grid (the ℓUC reference: 128).

    Returns:
        0-dim float32 >= 0, in colour units.

    Raises:
        ValueError: mismatched shapes, T < 2, or no texel seen in two frames.
    """
    _check_sequence(frames, gbuffer)
    channels = frames.shape[1]
    weight_sum = frames.new_zeros(num_labels, 1, grid_size, grid_size, dtype=torch.float64)
    colour_sum = frames.new_zeros(num_labels, channels, grid_size, grid_size, dtype=torch.float64)
    square_sum = torch.zeros_like(colour_sum)
    views = torch.zeros(num_labels, grid_size, grid_size, dtype=torch.int64, device=frames.device)
    for start in range(0, frames.shape[0], _CHUNK):
        chunk = slice(start, start + _CHUNK)
        texel_mean, texel_weight = unproject_to_texels(
            frames[chunk], gbuffer.uv[chunk], gbuffer.label[chunk], num_labels, grid_size
        )  # (n, K, C, D, D), (n, K, D, D)
        # float64 sums make the one-pass variance E[ω²] - E[ω]² accurate to ~1e-16.
        weight = texel_weight.double().unsqueeze(2)
        colour = texel_mean.double()
        weight_sum += weight.sum(dim=0)
        colour_sum += (weight * colour).sum(dim=0)
        square_sum += (weight * colour * colour).sum(dim=0)
        views += (texel_weight > 0).sum(dim=0)
    valid = views >= 2  # (K, D, D)
    if not valid.any():
        raise ValueError("surface_consistency: no texel is seen in two frames (sequence too short, or "
                         f"grid_size={grid_size} too fine for the resolution)")
    total = weight_sum.clamp(min=torch.finfo(torch.float64).tiny)
    mean = colour_sum / total
    std = (square_sum / total - mean * mean).clamp(min=0.0).sqrt()  # (K, C, D, D)
    return std.permute(0, 2, 3, 1)[valid].mean().float()


def warp_error(frames: Tensor, gbuffer: GBuffer, grid_size: int = 128) -> Tensor:
    """Mean absolute colour change between consecutive frames at pixels that see the same surface point.

    The warp error of video consistency work (a frame against the previous one warped by the motion, at
    pixels visible in both), with the exact motion of the G-buffers (``flow.source_positions``): for each
    non-void pixel q of frame t+1, the point p of frame t that shows q's surface point; frame t is sampled
    there bilinearly, between four pixels of q's label. Pixels whose surface point frame t does not show
    (occluded, off screen, at an edge) are not counted. The metric is mean |frame_t(p) - frame_{t+1}(q)| over
    channels and all counted pixels of all pairs.

    Hence a texture fixed on its surfaces scores exactly 0 where surfaces rest under a fixed camera (p = q),
    and elsewhere only the bilinear interpolation error of frame t between pixels, however detailed the
    texture is within a texel of ``grid_size`` (which only seeds the search for p).

    Args:
        frames: (T, C, H, W) float in [0, 1], one sequence in time order, T >= 2.
        gbuffer: the sequence's G-buffer, batch size T, same H, W; labels 0..K.
        grid_size: D, texels per side of each label's grid.

    Returns:
        0-dim float32 >= 0, in colour units (mean absolute difference per channel).

    Raises:
        ValueError: mismatched shapes, T < 2, or no pixel of frames 1..T-1 seen in the previous frame.
    """
    total, count = _warp_sums(frames, gbuffer, grid_size)
    if count.sum() == 0:
        raise ValueError("warp_error: no pixel of frames 1..T-1 sees a surface point seen in the previous "
                         f"frame (grid_size={grid_size} too fine, or no shared surface)")
    return (total.sum() / count.sum()).float()


def warp_error_by_label(frames: Tensor, gbuffer: GBuffer, num_labels: int, grid_size: int = 128) -> Tensor:
    """``warp_error`` over each label's pixels separately: which surfaces flicker.

    Args:
        frames: as ``warp_error``.
        gbuffer: as ``warp_error``.
        num_labels: K, object labels 1..K; labels above K are an error.
        grid_size: as ``warp_error``.

    Returns:
        (K,) float32, entry l - 1 the mean over label l's counted pixels of frames 1..T-1; NaN where no
        pixel of label l counts (not shown in two consecutive frames).
    """
    total, count = _warp_sums(frames, gbuffer, grid_size)
    if total.numel() > num_labels + 1:
        raise ValueError(f"warp_error_by_label: the G-buffer has label {total.numel() - 1} above "
                         f"num_labels={num_labels}")
    total = torch.nn.functional.pad(total, (0, num_labels + 1 - total.numel()))[1:]
    count = torch.nn.functional.pad(count, (0, num_labels + 1 - count.numel()))[1:]
    return (total / count).float()  # 0 / 0 = NaN where unseen


def _warp_sums(frames: Tensor, gbuffer: GBuffer, grid_size: int) -> tuple[Tensor, Tensor]:
    """Per label id 0..max: the summed |ĉ_t(q) - frame_{t+1}(q)| and the count, both over channels (float64)."""
    _check_sequence(frames, gbuffer)
    num_frames, channels = frames.shape[:2]
    num_labels = int(gbuffer.label.max())
    if num_labels == VOID:
        raise ValueError("warp_error: every pixel of the sequence is void")
    total = frames.new_zeros(num_labels + 1, dtype=torch.float64)
    count = frames.new_zeros(num_labels + 1, dtype=torch.float64)
    for start in range(0, num_frames - 1, _CHUNK):
        stop = min(start + _CHUNK, num_frames - 1)
        src, dst = slice(start, stop), slice(start + 1, stop + 1)
        position, counted = source_positions(gbuffer.uv[src], gbuffer.label[src], gbuffer.uv[dst],
                                             gbuffer.label[dst], num_labels, grid_size)
        warped = sample_at(frames[src], position)  # (n, C, H, W)
        difference = (warped - frames[dst].float()).abs().sum(dim=1)  # (n, H, W), summed over channels
        label = gbuffer.label[dst]
        total += torch.bincount(label[counted], weights=difference[counted].double(), minlength=num_labels + 1)
        count += torch.bincount(label[counted], minlength=num_labels + 1).double() * channels
    return total, count


def colour_error_by_label(pred: Tensor, target: Tensor, label: Tensor, num_labels: int) -> Tensor:
    """How far each label's mean colour is from the real one's: which surfaces take the wrong colour.

    Per frame and label, the mean colour of the label's pixels in ``pred`` and in ``target``; the error is the
    mean over channels of their absolute difference, averaged over the frames that show the label. It
    separates colour from structure: a translation that gives an object its real colour but blurs or misplaces
    its pattern scores 0, one that paints every object the same colour scores each object's distance from it.

    Args:
        pred: (B, C, H, W) float in [0, 1], e.g. translated frames.
        target: (B, C, H, W) float in [0, 1], the paired real photos.
        label: (B, H, W) int64 label ids, 0 = void, 1..K.
        num_labels: K; labels above K are an error.

    Returns:
        (K + 1,) float32 in [0, 1], entry l for label id l (entry 0: void); NaN where no frame shows l.
    """
    return colour_error_matrix(pred, target, label, num_labels).diagonal()


def colour_error_matrix(pred: Tensor, target: Tensor, label: Tensor, num_labels: int) -> Tensor:
    """Each label's mean colour in ``pred`` against every label's real mean colour: whose colour a label took.

    Entry (i, j) is ``colour_error_by_label``'s error with label i's pixels of ``pred`` compared with label j's
    pixels of ``target``, averaged over the frames that show both; its diagonal is ``colour_error_by_label``.
    Where labels cannot be told apart without the pairing (copies of one shape), the best assignment over this
    matrix scores the translation's colours up to which copy carries which. Arguments as ``colour_error_by_label``.

    Returns:
        (K + 1, K + 1) float32 in [0, 1], rows the labels of ``pred``, columns those of ``target``; NaN where no
        frame shows both.
    """
    _check_pair(pred, target, None)
    _check_label_map(pred, label, num_labels, "colour_error_matrix")
    pred_means, counts = _label_means(pred, label, num_labels)
    target_means, _ = _label_means(target, label, num_labels)
    # (B, K + 1, K + 1): pred's label i against target's label j in each frame
    difference = (pred_means.unsqueeze(2) - target_means.unsqueeze(1)).abs().mean(-1)
    shown = (counts > 0).double()
    both = shown.unsqueeze(2) * shown.unsqueeze(1)
    return (difference.nan_to_num().sum(0) / both.sum(0)).float()  # 0 / 0 = NaN where no frame shows both


def contrast_by_label(images: Tensor, label: Tensor, num_labels: int, ring: int = 3) -> Tensor:
    """How much each label stands out from what surrounds it on screen: whether an object can be seen at all.

    Per frame and label, the mean colour of the label's pixels against the mean colour of the pixels within
    ``ring`` pixels around them (any other label, void included); the contrast is the mean over channels of their
    absolute difference, averaged over the frames that show the label with a non-empty ring. A translation that
    draws an object in the colour of the table under it scores near 0 there, however close its colour error.

    Args:
        images: (B, C, H, W) float in [0, 1].
        label: (B, H, W) int64 label ids, 0 = void, 1..K.
        num_labels: K; labels above K are an error.
        ring: width in pixels of the surroundings, >= 1.

    Returns:
        (K + 1,) float32 in [0, 1], entry l for label id l (entry 0: void); NaN where no frame shows l.
    """
    _check_label_map(images, label, num_labels, "contrast_by_label")
    if ring < 1:
        raise ValueError(f"ring must be >= 1, got {ring}")
    total = torch.zeros(num_labels + 1, dtype=torch.float64, device=images.device)
    frames = torch.zeros(num_labels + 1, dtype=torch.float64, device=images.device)
    for start in range(0, images.shape[0], _CHUNK):  # one-hot masks of a few frames at a time
        chunk = slice(start, start + _CHUNK)
        masks = F.one_hot(label[chunk], num_labels + 1).permute(0, 3, 1, 2).double()  # (b, K + 1, H, W)
        around = F.max_pool2d(masks, 2 * ring + 1, stride=1, padding=ring) * (1 - masks)
        pixels = images[chunk].flatten(2).double()  # (b, C, N)
        inside, outside = masks.flatten(2), around.flatten(2)
        n_inside, n_outside = inside.sum(-1), outside.sum(-1)  # (b, K + 1)
        mean_inside = torch.einsum("bkn,bcn->bkc", inside, pixels) / n_inside.clamp(min=1).unsqueeze(-1)
        mean_outside = torch.einsum("bkn,bcn->bkc", outside, pixels) / n_outside.clamp(min=1).unsqueeze(-1)
        shown = (n_inside > 0) & (n_outside > 0)
        total += torch.where(shown, (mean_inside - mean_outside).abs().mean(-1), 0).sum(0)
        frames += shown.sum(0)
    return (total / frames).float()  # 0 / 0 = NaN where no frame shows a label


def detail_by_label(images: Tensor, label: Tensor, num_labels: int) -> Tensor:
    """How much each label's colours vary within it on screen: its patterns, letters, grain and shading.

    Per frame and label, the standard deviation of the label's pixels (per channel, then the mean over channels),
    averaged over the frames that show the label in at least two pixels. A label drawn as a flat or blurred blob
    scores near 0 however right its mean colour; one drawn with noise scores high, so read it beside HaarPSI.

    Args:
        images: (B, C, H, W) float in [0, 1].
        label: (B, H, W) int64 label ids, 0 = void, 1..K.
        num_labels: K; labels above K are an error.

    Returns:
        (K + 1,) float32 in [0, 0.5], entry l for label id l (entry 0: void); NaN where no frame shows l.
    """
    _check_label_map(images, label, num_labels, "detail_by_label")
    means, counts = _label_means(images, label, num_labels)
    squares, _ = _label_means(images.double().square(), label, num_labels)
    std = (squares - means.square()).clamp(min=0).sqrt().mean(-1)  # (B, K + 1); NaN where a frame lacks a label
    shown = counts >= 2
    return (torch.where(shown, std, 0).sum(0) / shown.sum(0)).float()  # 0 / 0 = NaN where no frame shows a label


def label_iou(pred: Tensor, target: Tensor, num_labels: int) -> Tensor:
    """Intersection over union of each label between two label maps, over all frames at once.

    Args:
        pred: (B, H, W) int64 label ids in 0..K, e.g. how the real->sim translator labels real photos.
        target: (B, H, W) int64 true label ids in 0..K (0 = void).
        num_labels: K; ids outside 0..K are an error (``models.texture_space.check_labels``).

    Returns:
        (K + 1,) float32 in [0, 1], entry l for label id l (entry 0: void); NaN where neither map holds l.
    """
    if pred.shape != target.shape or pred.ndim != 3:
        raise ValueError(f"pred and target must both be (B, H, W); got {tuple(pred.shape)} and {tuple(target.shape)}")
    check_labels(pred, num_labels)
    check_labels(target, num_labels)
    size = num_labels + 1
    joint = torch.bincount((target * size + pred).flatten(), minlength=size * size).view(size, size).double()
    both = joint.diagonal()
    union = joint.sum(0) + joint.sum(1) - both
    return (both / union).float()  # 0 / 0 = NaN where neither map holds a label


def _label_means(images: Tensor, label: Tensor, num_labels: int) -> tuple[Tensor, Tensor]:
    """Per frame, each label's mean pixel and pixel count: (B, C, H, W), (B, H, W) -> (B, K + 1, C), (B, K + 1).

    Float64; the means are NaN where a frame does not show a label.
    """
    batch, channels = images.shape[:2]
    index = label.flatten(1)  # (B, N)
    counts = torch.zeros(batch, num_labels + 1, dtype=torch.float64, device=images.device)
    counts.scatter_add_(1, index, torch.ones_like(index, dtype=torch.float64))
    sums = torch.zeros(batch, num_labels + 1, channels, dtype=torch.float64, device=images.device)
    sums.scatter_add_(1, index.unsqueeze(-1).expand(-1, -1, channels), images.flatten(2).transpose(1, 2).double())
    return sums / counts.unsqueeze(-1), counts


def _check_label_map(images: Tensor, label: Tensor, num_labels: int, name: str) -> None:
    """Raise unless ``label`` is (B, H, W) for (B, C, H, W) ``images`` with ids at most ``num_labels``."""
    if label.shape != (images.shape[0], *images.shape[2:]):
        raise ValueError(f"label must be (B, H, W) = {(images.shape[0], *images.shape[2:])}; got {tuple(label.shape)}")
    if label.numel() and int(label.max()) > num_labels:
        raise ValueError(f"{name}: label {int(label.max())} above num_labels={num_labels}")


def _check_pair(pred: Tensor, target: Tensor, mask: Tensor | None) -> None:
    if pred.ndim != 4 or pred.shape != target.shape:
        raise ValueError(f"pred and target must both be (B, C, H, W); got {tuple(pred.shape)} and "
                         f"{tuple(target.shape)}")
    if mask is None:
        return
    b, _, h, w = pred.shape
    if mask.shape != (b, h, w) or mask.dtype != torch.bool:
        raise ValueError(f"mask must be (B, H, W) = {(b, h, w)} bool; got {tuple(mask.shape)} {mask.dtype}")
    empty = torch.nonzero(~mask.flatten(1).any(dim=1)).flatten().tolist()
    if empty:
        raise ValueError(f"mask is empty in images {empty}: the masked metric is undefined there; "
                         "drop those frames before scoring")


def _check_sequence(frames: Tensor, gbuffer: GBuffer) -> None:
    if frames.ndim != 4 or frames.shape[0] != gbuffer.batch_size or frames.shape[2:] != gbuffer.label.shape[1:]:
        raise ValueError(f"frames must be (T, C, H, W) matching the G-buffer's (T, H, W) = "
                         f"{tuple(gbuffer.label.shape)}; got {tuple(frames.shape)}")
    if frames.shape[0] < 2:
        raise ValueError(f"a temporal metric needs at least 2 frames, got {frames.shape[0]}")


def _reduce(value: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return value.mean()
    if reduction == "none":
        return value
    raise ValueError(f"unknown reduction {reduction!r}; choose 'mean' or 'none'")
