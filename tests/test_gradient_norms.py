"""RelativeGradientClip: a spike is scaled down to a multiple of the earlier norms; the usual batches are untouched.

GradientNormRecord: the logs' latest norm, the peak and the clipped count since the last reset.
"""

import math

import pytest
import torch

from triton_s2r.training.gradient_norms import GradientNormRecord, RelativeGradientClip


def gradients(norm: float) -> list[torch.Tensor]:
    """Two tensors whose total norm is ``norm`` (3-4-5: 0.6 and 0.8 of it)."""
    return [torch.tensor([0.6 * norm]), torch.tensor([[0.8 * norm]])]


def total(tensors: list[torch.Tensor]) -> float:
    return float(torch.nn.utils.get_total_norm(tensors))


def test_a_spike_is_scaled_to_the_ratio_times_the_running_mean_and_does_not_raise_it() -> None:
    clip = RelativeGradientClip(ratio=3.0, decay=0.5)
    for _ in range(4):  # the usual batches: norm 1, below 3x the mean, left as they are
        usual = gradients(1.0)
        norm, clipped = clip(usual)
        assert float(norm) == pytest.approx(1.0) and total(usual) == pytest.approx(1.0) and not clipped
    spike = gradients(100.0)
    norm, clipped = clip(spike)
    assert float(norm) == pytest.approx(100.0) and clipped  # the norm before clipping, for the logs
    assert total(spike) == pytest.approx(3.0, rel=1e-4)
    assert spike[0].item() / spike[1].item() == pytest.approx(0.75)  # scaled as a whole: its direction kept
    assert clip.mean is not None and float(clip.mean) == pytest.approx(0.5 * 1.0 + 0.5 * 3.0)  # the clipped norm


def test_the_first_batch_is_not_clipped_and_a_non_finite_norm_leaves_the_mean_alone() -> None:
    clip = RelativeGradientClip(ratio=2.0)
    first = gradients(50.0)
    assert not clip(first)[1]
    assert total(first) == pytest.approx(50.0) and float(clip.mean) == pytest.approx(50.0)
    bad = [torch.tensor([math.nan]), torch.tensor([[1.0]])]
    assert math.isnan(float(clip(bad)[0]))
    assert float(clip.mean) == pytest.approx(50.0)
    later = gradients(60.0)  # still below 2x the mean: the NaN batch did not poison the limit
    clip(later)
    assert total(later) == pytest.approx(60.0)


def test_a_ratio_at_or_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="above 1"):
        RelativeGradientClip(ratio=1.0)


def test_the_record_keeps_the_peak_and_the_clipped_count_until_a_reset_and_leaves_out_nan() -> None:
    record = GradientNormRecord()
    for norm, clipped in ((3.0, False), (9.0, True), (math.nan, False), (2.0, True)):
        record.add("d", torch.tensor(norm), torch.tensor(clipped))
        record.add("g", torch.tensor(norm / 2))
    got = {name: float(value) for name, value in record.metrics().items()}
    assert got == {"gradient_norm_d": 2.0, "gradient_norm_g": 1.0, "gradient_norm_d_peak": 9.0,
                   "gradient_norm_g_peak": 4.5, "gradient_clipped_d": 2.0}  # no clip on g: no count
    record.reset()
    record.add("d", torch.tensor(1.0), torch.tensor(False))
    got = {name: float(value) for name, value in record.metrics().items()}
    assert got["gradient_norm_d_peak"] == 1.0 and got["gradient_clipped_d"] == 0.0
    assert got["gradient_norm_g"] == 1.0 and "gradient_norm_g_peak" not in got  # the latest outlives a reset
