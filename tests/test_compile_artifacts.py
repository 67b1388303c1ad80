"""system.compile_cache_file: the compile cache carried in one file to processes with empty caches."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from tiny_assets import train_twice_through_a_compile_cache_file

#: A process with its own empty Inductor cache: loads the file, compiles a small function, saves.
#: Prints: pieces loaded, Inductor cache hits, misses, pieces written.
SCRIPT = """
import sys, torch
from pathlib import Path
from torch._dynamo.utils import counters
from triton_s2r.training.compile_artifacts import load_compile_artifacts, save_compile_artifacts
path = Path(sys.argv[1])
loaded = load_compile_artifacts(path)
step = torch.compile(lambda x: (x.sin() * 2 + 1).sum(), dynamic=False)
assert step(torch.zeros(8)).item() == 8
inductor = counters["inductor"]
print(len(loaded), inductor["fxgraph_cache_hit"], inductor["fxgraph_cache_miss"], save_compile_artifacts(path, loaded))
"""


def fresh_process(path: Path, cache: Path) -> tuple[list[int], str]:
    """Run ``SCRIPT`` with an empty Inductor cache folder ``cache``; its four numbers and its stderr."""
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(path)], capture_output=True, text=True,
                          env={**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(cache)}, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return [int(n) for n in done.stdout.split()[-4:]], done.stderr


def test_a_fresh_process_compiles_nothing_that_the_file_holds(tmp_path) -> None:
    """The first process finds an unreadable file, says so, compiles and writes; the second compiles nothing."""
    path = tmp_path / "compiled.bin"
    path.write_bytes(b"not a compile cache")
    (loaded, hits, misses, written), stderr = fresh_process(path, tmp_path / "a")
    assert (loaded, hits, misses) == (0, 0, 1) and written > 0
    assert f"{path} could not be loaded" in stderr and "compiling anew" in stderr
    first = path.read_bytes()
    assert first != b"not a compile cache"

    assert fresh_process(path, tmp_path / "b")[0] == [written, 1, 0, 0]  # all loaded and used, nothing to add
    assert path.read_bytes() == first


@pytest.mark.slow
def test_a_compiled_run_on_an_empty_cache_starts_from_the_file_another_run_wrote(data_root, tmp_path,
                                                                              monkeypatch) -> None:
    """The tiny recipe compiled: the first run writes the file, a second with empty caches compiles nothing."""
    path = tmp_path / "compiled.bin"
    args = ["train", "experiment=tiny", "trainer.enable_progress_bar=false", "data.val_frames=0",
            f"data.root={data_root}", "system.compile=true", f"system.compile_cache_file={path}",
            "trainer.max_epochs=1", "data.steps_per_epoch=2", "loss.surface_losses_from=1",
            "system.resolution_schedule=[[0,48]]"]
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor_a"))
    first, second = train_twice_through_a_compile_cache_file(args, tmp_path, monkeypatch)
    assert "does not exist yet" in first and "compiled pieces to" in first
    assert "compiled pieces from" in second and "compiled pieces to" not in second  # loaded, nothing new to write
