"""Fault test (slow tier): training killed with SIGKILL at random moments still ends as if never interrupted.

Rerun each time with the same command, it ends with the weights of a run that was never interrupted.
"""

from __future__ import annotations

import random
import subprocess
import sys
import time

import pytest
import torch

from triton_s2r.runs.run_dir import RunDir, load_checkpoint

pytestmark = pytest.mark.slow


def test_kill_9_and_rerun_gives_the_uninterrupted_weights(data_root, tmp_path) -> None:
    def command(run) -> list[str]:
        return [sys.executable, "-m", "triton_s2r.train", "experiment=tiny", "logger=none", f"data.root={data_root}",
                "trainer.enable_progress_bar=false", "trainer.max_epochs=6", "checkpoints.keep=2",
                f"hydra.run.dir={run}"]

    straight, killed = RunDir(tmp_path / "straight"), RunDir(tmp_path / "killed")
    subprocess.run(command(straight.path), check=True, capture_output=True)
    rng = random.Random(0)
    # One kill during start-up, then one shortly (0-1.5 s: mid-epoch or mid-save) after epochs 1, 2 and 3 are saved.
    for epoch in (None, 1, 2, 3):
        process = subprocess.Popen(command(killed.path), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 300
        while epoch is not None and not (killed.checkpoint_dir / f"epoch{epoch:04d}.ckpt").exists():
            assert process.poll() is None and time.monotonic() < deadline, "training ended before the kill"
            time.sleep(0.05)
        time.sleep(rng.uniform(1.0, 4.0) if epoch is None else rng.uniform(0.0, 1.5))
        process.kill()
        process.wait()
        assert killed.epochs_done() == 0  # killed before the end
    subprocess.run(command(killed.path), check=True, capture_output=True)
    assert killed.epochs_done() == 6
    assert not list(killed.path.rglob(".*.ckpt")) and not any("-v" in p.name for p in killed.checkpoints())
    expected, resumed = load_checkpoint(straight.last)["state_dict"], load_checkpoint(killed.last)["state_dict"]
    assert int(resumed["batches_done"]) == 30
    for key in expected:
        torch.testing.assert_close(resumed[key], expected[key], rtol=1e-5, atol=1e-6, msg=lambda m, k=key: f"{k}: {m}")
