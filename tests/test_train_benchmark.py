"""benchmarks.train: the GPU training-step benchmark on a machine without a GPU."""

import sys

import pytest


def test_without_a_gpu_it_stops_and_names_the_cpu_benchmark(tmp_path, monkeypatch, capsys) -> None:
    from benchmarks import train

    monkeypatch.setattr(train.torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(train, "run_rows", lambda args: pytest.fail("no step may be timed"))
    monkeypatch.setattr(sys, "argv", ["train", "--data", str(tmp_path), "--no-write"])
    with pytest.raises(SystemExit):
        train.main()
    error = capsys.readouterr().err
    assert "on a CUDA GPU, and torch sees none here" in error and "benchmarks.demo_step" in error


def test_each_row_starts_without_the_compiled_graphs_and_timers_of_earlier_rows() -> None:
    """A row after a compiled one neither reuses its graphs nor counts its compile time (or, on a GPU, its pools)."""
    from benchmarks import train

    double = train.torch.compile(lambda x: 2 * x, backend="eager")
    double(train.torch.ones(3))
    utils = train.torch._dynamo.utils
    assert utils.compilation_time_metrics and utils.counters["stats"]["unique_graphs"] >= 1
    train.forget_earlier_rows()
    assert not utils.compilation_time_metrics and not utils.counters
    double(train.torch.ones(3))  # compiles anew, as in a fresh process
    assert utils.counters["stats"]["unique_graphs"] == 1
