"""Fault test (slow tier): training killed with SIGKILL at random moments, rerun each time with the same
command, ends with the weights of a run that was never interrupted."""

from __future__ import annotations

import random
import subprocess
import sys
import time

import pytest
import torch

from triton_s2r.run_dir import RunDir, load_checkpoint

pytestmark = pytest.mark.slow


def test_kill_9_and_rerun_gives_the_uninterrupted_weights(data_root, tmp_path) -> None:
    def command(run) -> list[str]:
        return [sys.executable, "-m", "triton_s2r.train", "experiment=tiny", "logger=none", f"data.root={data_root}",
                "trainer.enable_progress_bar=false", "trainer.max_epochs=6", "checkpoints.keep=2",
                f"hydra.run.dir={run}"]

    straight, killed = RunDir(tmp_path / "straight"), RunDir(tmp_path / "killed")
    start = time.perf_counter()
    subprocess.run(command(straight.path), check=True, capture_output=True)
    seconds = time.perf_counter() - start
    rng = random.Random(0)
    interrupted = 0
    for _ in range(4):  # moments anywhere from the imports to the last epoch's checkpoint
        process = subprocess.Popen(command(killed.path), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.2, 0.9) * seconds)
        process.kill()
        process.wait()
        interrupted += killed.epochs_done() == 0
    assert interrupted >= 2  # the kills landed before the end
    subprocess.run(command(killed.path), check=True, capture_output=True)
    assert killed.epochs_done() == 6
    assert not list(killed.path.rglob(".*.ckpt")) and not any("-v" in p.name for p in killed.checkpoints())
    expected, resumed = load_checkpoint(straight.last)["state_dict"], load_checkpoint(killed.last)["state_dict"]
    assert int(resumed["batches_done"]) == 30
    for key in expected:
        torch.testing.assert_close(resumed[key], expected[key], rtol=1e-5, atol=1e-6, msg=lambda m, k=key: f"{k}: {m}")
