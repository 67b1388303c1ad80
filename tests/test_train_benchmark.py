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
