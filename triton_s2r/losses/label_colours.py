"""Label colours: each label's mean colour in the translation against a colour the user gives (docs/method.md §4.11).

The reference code's optional colour loss, against objects taking each other's colours: the unpaired terms cannot
tell which of several alike objects wears which colour, a person who knows the scene can ("the can is red").
Everything stays on the device (sums per label by ``index_add``, no indexing by data), so nothing waits for the GPU.
"""

from __future__ import annotations

from torch import Tensor


def label_mean_colours(image: Tensor, label: Tensor, num_ids: int) -> tuple[Tensor, Tensor]:
    """Each label id's mean colour over a batch.

    Args:
        image: (B, C, H, W) float.
        label: (B, H, W) int64 ids in [0, num_ids).
        num_ids: N, the number of ids.

    Returns:
        (N, C) mean colours (zeros where an id has no pixel) and (N,) pixel counts (float).
    """
    channels = image.shape[1]
    flat = label.reshape(-1)
    sums = image.new_zeros(num_ids, channels).index_add(0, flat, image.permute(0, 2, 3, 1).reshape(-1, channels))
    counts = image.new_zeros(num_ids).index_add(0, flat, image.new_ones(flat.shape[0]))
    return sums / counts.clamp_min(1.0)[:, None], counts


def label_colour_loss(image: Tensor, label: Tensor, targets: Tensor, has_target: Tensor) -> Tensor:
    """Mean squared distance of the labels' mean colours in ``image`` to their targets.

    Args:
        image: (B, 3, H, W) float, colours in [0, 1].
        label: (B, H, W) int64 label ids in [0, N).
        targets: (N, 3) float in [0, 1], the colour of each id (any value where it has none).
        has_target: (N,) bool, the ids that have a colour.

    Returns:
        0-dim: over the ids with a colour and at least one pixel in the batch, the mean over ids of the squared
        distance (mean over channels) of the id's mean colour to its target; 0 when there is none.
    """
    means, counts = label_mean_colours(image, label, targets.shape[0])
    used = (has_target & (counts > 0)).to(image.dtype)
    errors = (means - targets).square().mean(dim=1)
    return (errors * used).sum() / used.sum().clamp_min(1.0)
