"""Exact motion between frames of a rendered sequence, from their G-buffers (for ``metrics.warp_error``).

Pixels with the same label and UV see the same surface point (docs/method.md §4.3), so the G-buffers of two
frames define the flow between them without estimating it from colours. For each pixel q of a frame, the
point p of the previous frame showing q's surface point is found in three steps: pixels whose label and UV
did not change keep p = q (the surfaces at rest under a fixed camera: exact); the others start from the mean
position of the previous frame's pixels near q's (label, u, v), splatted into per-label texel grids, then
take Newton steps that solve uv(p) = uv(q) on the previous frame's UV map, linear between its pixels. q
counts only where such a p exists on q's surface (not occluded, not off screen, not across an edge).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from triton_s2r.models.texture_space import sample_label_textures, unproject_to_texels
from triton_s2r.render.gbuffer import VOID

_NEWTON_STEPS = 3
_STATIC_UV = 1e-6  # UV change below which a pixel still sees the same surface point


def _uv_jacobian(uv: Tensor, label: Tensor) -> tuple[Tensor, Tensor]:
    """Per pixel, d(u, v)/d(x, y) from a neighbour of the same label, on the side of the smaller change.

    Args:
        uv: (N, 2, H, W) float32.
        label: (N, H, W) int64.

    Returns:
        ``(jacobian, valid)``: (N, H, W, 2, 2) float32 with rows (u, v) and columns (x, y), and (N, H, W) bool,
        false where a direction has no neighbour of the pixel's label.
    """
    columns, ok = [], []
    # (F.pad's (left, right, top, bottom) for the forward and for the backward difference) along x, then y
    for dim, (after, before) in ((3, ((0, 1, 0, 0), (1, 0, 0, 0))), (2, ((0, 0, 0, 1), (0, 0, 1, 0)))):
        same = (torch.diff(label, dim=dim - 1) == 0).unsqueeze(1).float()  # (N, 1, ...) neighbours of one label
        change = torch.diff(uv, dim=dim) * same
        forward, forward_ok = F.pad(change, after), F.pad(same, after)
        backward, backward_ok = F.pad(change, before), F.pad(same, before)
        # Of the two one-sided differences, the smaller: the other may cross a UV seam of the same label.
        forward_size = torch.where(forward_ok > 0, forward.abs().sum(1, keepdim=True), torch.inf)
        backward_size = torch.where(backward_ok > 0, backward.abs().sum(1, keepdim=True), torch.inf)
        columns.append(torch.where(forward_size <= backward_size, forward, backward))
        ok.append((forward_ok + backward_ok)[:, 0] > 0)
    jacobian = torch.stack(columns, dim=-1).permute(0, 2, 3, 1, 4)  # (N, H, W, 2 (u, v), 2 (x, y))
    return jacobian, ok[0] & ok[1]


def _gather(values: Tensor, index: Tensor) -> Tensor:
    """The entries of values (N, H, W, ...) at flat pixel indices index (N, H, W) of the same frame."""
    n, h, w = index.shape
    flat = values.reshape(n, h * w, -1)
    picked = flat.gather(1, index.reshape(n, h * w, 1).expand(-1, -1, flat.shape[-1]))
    return picked.reshape(n, h, w, *values.shape[3:])


def source_positions(uv: Tensor, label: Tensor, uv_next: Tensor, label_next: Tensor, num_labels: int,
                     grid_size: int = 128) -> tuple[Tensor, Tensor]:
    """Where the first frames show the surface point of each pixel of the next ones.

    Args:
        uv: the earlier frames' UV, (N, 2, H, W) float in [0, 1].
        label: their labels, (N, H, W) int64, 0 = void.
        uv_next: the later frames' UV, same shape; pair i is (frame i of uv, frame i of uv_next).
        label_next: the later frames' labels.
        num_labels: K, labels 1..K.
        grid_size: D of the texel grids that give the Newton steps their start.

    Returns:
        ``(position, counted)``: (N, H, W, 2) float32 pixel coordinates (x, y) in the earlier frame, and
        (N, H, W) bool, true where the later frame's pixel is not void and the earlier frame shows its surface
        point between four pixels of its own label.
    """
    uv, uv_next = uv.float(), uv_next.float()
    n, _, h, w = uv.shape
    ys, xs = torch.meshgrid(torch.arange(h, device=uv.device), torch.arange(w, device=uv.device), indexing="ij")
    pixel = torch.stack([xs, ys], dim=-1).float().expand(n, h, w, 2)  # (N, H, W, 2)

    # Start: the mean position of the earlier frame's pixels around each later pixel's (label, u, v).
    mean, weight = unproject_to_texels(pixel.permute(0, 3, 1, 2), uv, label, num_labels, grid_size)
    table = torch.cat([mean * weight.unsqueeze(2), weight.unsqueeze(2)], dim=2).flatten(0, 1)  # (N·K, 3, D, D)
    offset = (torch.arange(n, device=label.device) * num_labels).view(n, 1, 1)
    folded = torch.where(label_next != VOID, label_next + offset, label_next)
    gathered = sample_label_textures(table, uv_next, folded)  # (N, 3, H, W)
    seen = gathered[:, 2] > 0
    position = (gathered[:, :2] / gathered[:, 2:].clamp(min=torch.finfo(gathered.dtype).tiny)).permute(0, 2, 3, 1)
    static = (label == label_next) & ((uv - uv_next).abs().amax(dim=1) <= _STATIC_UV)
    position = torch.where(static.unsqueeze(-1), pixel, position)

    # Newton steps on uv(p) = uv_next(q), uv linear around the nearest earlier pixel.
    jacobian, jacobian_ok = _uv_jacobian(uv, label)
    a, b, c, d = jacobian.flatten(-2).unbind(-1)  # [[du/dx, du/dy], [dv/dx, dv/dy]]
    determinant = a * d - b * c
    usable = jacobian_ok & (determinant.abs() > 1e-12)
    inverse = torch.stack([torch.stack([d, -b], -1), torch.stack([-c, a], -1)], -2)  # 2x2 adjugate / determinant
    inverse = inverse / torch.where(usable, determinant, 1.0)[..., None, None]
    uv_pixels = uv.permute(0, 2, 3, 1)  # (N, H, W, 2)
    target = uv_next.permute(0, 2, 3, 1)
    limit = torch.tensor([w - 1, h - 1], device=uv.device, dtype=position.dtype)

    def pixel_of(position: Tensor, rounding) -> Tensor:  # a pixel on screen, whatever position holds
        return torch.minimum(rounding(torch.nan_to_num(position, nan=0.0)).clamp(min=0), limit)

    def index_of(position: Tensor) -> Tensor:  # flat index of the nearest pixel
        nearest = pixel_of(position, torch.round)
        return (nearest[..., 1] * w + nearest[..., 0]).long()

    def newton_step(position: Tensor) -> tuple[Tensor, Tensor]:
        index = index_of(position)
        step = (_gather(inverse, index) @ (target - _gather(uv_pixels, index)).unsqueeze(-1)).squeeze(-1)
        return pixel_of(position, torch.round) + step, _gather(usable.unsqueeze(-1), index).squeeze(-1)

    for _ in range(_NEWTON_STEPS):
        moved, ok = newton_step(position)
        position = torch.where((ok & ~static).unsqueeze(-1), moved, position)

    # Counted: on screen, converged (a further step moves p by under a quarter pixel), and all four taps on q's
    # own surface.
    inside = (position >= 0).all(-1) & (position <= limit).all(-1)
    moved, ok = newton_step(position)
    converged = static | (ok & ((moved - position).abs().amax(-1) <= 0.25))
    low, high = pixel_of(position, torch.floor), pixel_of(position, torch.ceil)
    # A tap is on q's surface if it has q's label and a UV that a pixel's move along the surface explains
    # (not across a UV seam of the same label).
    reach = 1.5 * _gather(jacobian.abs().sum(-1).amax(-1, keepdim=True), index_of(position)).squeeze(-1)
    own = torch.ones_like(seen)
    for x in (low[..., 0], high[..., 0]):
        for y in (low[..., 1], high[..., 1]):
            tap = (y * w + x).long()
            own &= _gather(label.unsqueeze(-1), tap).squeeze(-1) == label_next
            own &= (_gather(uv_pixels, tap) - target).abs().amax(-1) <= reach + _STATIC_UV
    counted = (label_next != VOID) & (seen | static) & inside & converged & own
    return position, counted


def sample_at(frames: Tensor, position: Tensor) -> Tensor:
    """Bilinear samples of frames (N, C, H, W) at pixel coordinates position (N, H, W, 2) (x, y) -> (N, C, H, W)."""
    h, w = frames.shape[-2:]
    scale = torch.tensor([2.0 / max(w - 1, 1), 2.0 / max(h - 1, 1)], device=position.device)
    return F.grid_sample(frames.float(), position * scale - 1.0, mode="bilinear", align_corners=True)
