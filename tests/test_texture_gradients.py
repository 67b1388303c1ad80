"""benchmarks.texture_gradients on tiny runs: every term's pull on the texture, against ℓTR's."""

from __future__ import annotations

from pathlib import Path

import pytest
from omegaconf.errors import OmegaConfBaseException
from tiny_assets import TINY_RUN

from benchmarks.texture_gradients import REFERENCE, table, texture_gradients
from triton_s2r.cli import main


@pytest.fixture(scope="module")
def unshaded_run(data_root, tmp_path_factory) -> Path:
    """A tiny run with x_ab drawn by G_B everywhere (``model.translator.shading_channels=0``, the reference)."""
    run = tmp_path_factory.mktemp("unshaded") / "run"
    assert main(["train", *TINY_RUN, f"data.root={data_root}", f"hydra.run.dir={run}",
                 "model.translator.shading_channels=0"]) == 0
    return run


def test_every_term_pulls_on_the_texture_until_it_is_detached(unshaded_run) -> None:
    sums = texture_gradients(unshaded_run, batches=2)
    # The tiny run trains the surface terms from its first batch: every weighted term is there.
    assert {"adversarial", "reconstruction", "cycle", REFERENCE} <= set(sums)
    assert all(grad.norm() > 0 for grad in sums.values())  # each reaches the texture through x_a, or π
    assert f"| {REFERENCE} | {float(sums[REFERENCE].norm()) / 2:.3e} | 1.000 |" in table(sums, 2)
    # With the texture detached from the networks' input, only ℓTR and the texture pairing, which read π, train it
    # (docs/method.md §4.6).
    assert "texture_pairing" in sums
    detached = texture_gradients(unshaded_run, batches=2, overrides=("model.translator.detach_texture_input=true",))
    direct = {REFERENCE, "texture_pairing"}
    assert all(detached[name].norm() > 0 for name in direct)
    assert all(grad.norm() == 0 for name, grad in detached.items() if name not in direct)
    assert "| reconstruction | 0.000e+00 | n/a |" in table(detached, 2).splitlines()
    only_tr = texture_gradients(unshaded_run, batches=2, overrides=("model.translator.detach_texture_input=true",
                                                                    "loss.loss_weights.texture_pairing=0"))
    assert table(only_tr, 2).splitlines()[-1].endswith("| 1.000 |")  # all terms: ℓTR's direction


def test_with_the_shaded_output_the_texture_learns_from_what_shows_it(run_dir) -> None:
    """The defaults (docs/method.md §3.3): the terms that compare the shaded pixels, ℓTR and the texture pairing."""
    sums = texture_gradients(run_dir, batches=2)
    pulling = {name for name, grad in sums.items() if grad.norm() > 0}
    assert pulling == {"adversarial", "robot_pairing", REFERENCE, "texture_pairing"}
    assert {"reconstruction", "cycle", "content"} <= set(sums)  # there, with no pull on the texture


def test_misspelt_override_is_refused(run_dir) -> None:
    with pytest.raises(OmegaConfBaseException, match="no_such_key"):
        texture_gradients(run_dir, batches=1, overrides=("model.translator.no_such_key=true",))
