"""benchmarks.host_calls: the ATen calls of one eager training step, by operator and call site."""

from __future__ import annotations

import torch

from benchmarks import host_calls
from triton_s2r.losses.reconstruction import gaussian_window


def test_the_counter_sees_each_call_and_its_triton_s2r_call_site() -> None:
    x = torch.rand(1, 1, 16, 16)
    gaussian_window(x, banded=False)  # makes the window it keeps
    with host_calls.CallCounter() as counter:
        x.mul(2).add(1)
        gaussian_window(x, banded=False)
    assert counter.operators["mul"] == 1 and counter.operators["add"] == 1 and counter.operators["convolution"] == 1
    sites = dict(counter.sites)
    assert sites["(outside triton_s2r)"] == 2
    assert any(site.startswith("losses/reconstruction.py:") and "gaussian_window" in site for site in sites)


def test_one_step_of_the_recipe_is_counted(data_root) -> None:
    # fp32: on a CPU without bf16 instructions a bf16 step of the recipe takes many minutes (emulated convolutions)
    counter = host_calls.count_step(str(data_root), batch=2, crop=128, precision="32-true")
    total = sum(counter.operators.values())
    assert total > 1000 and counter.operators["convolution_backward"] > 0  # a forward and a backward pass
    assert any("training/system.py" in site for site in counter.sites)
