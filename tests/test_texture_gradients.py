"""benchmarks.texture_gradients on the session's tiny run: every term's pull on the texture, against ℓTR's."""

from __future__ import annotations

import pytest
from omegaconf.errors import OmegaConfBaseException

from benchmarks.texture_gradients import REFERENCE, table, texture_gradients


def test_every_term_pulls_on_the_texture_until_it_is_detached(run_dir) -> None:
    sums = texture_gradients(run_dir, batches=2)
    # The tiny run trains the surface terms from its first batch: every weighted term is there.
    assert {"adversarial", "reconstruction", "cycle", REFERENCE} <= set(sums)
    assert all(grad.norm() > 0 for grad in sums.values())  # each reaches the texture through x_a, or π
    assert f"| {REFERENCE} | {float(sums[REFERENCE].norm()) / 2:.3e} | 1.000 |" in table(sums, 2)
    # With the texture detached from the networks' input, only ℓTR and the texture pairing, which read π, train it
    # (docs/method.md §4.6).
    assert "texture_pairing" in sums
    detached = texture_gradients(run_dir, batches=2, overrides=("model.translator.detach_texture_input=true",))
    direct = {REFERENCE, "texture_pairing"}
    assert all(detached[name].norm() > 0 for name in direct)
    assert all(grad.norm() == 0 for name, grad in detached.items() if name not in direct)
    assert "| reconstruction | 0.000e+00 | n/a |" in table(detached, 2).splitlines()
    only_tr = texture_gradients(run_dir, batches=2, overrides=("model.translator.detach_texture_input=true",
                                                               "loss.loss_weights.texture_pairing=0"))
    assert table(only_tr, 2).splitlines()[-1].endswith("| 1.000 |")  # all terms: ℓTR's direction


def test_misspelt_override_is_refused(run_dir) -> None:
    with pytest.raises(OmegaConfBaseException, match="no_such_key"):
        texture_gradients(run_dir, batches=1, overrides=("model.translator.no_such_key=true",))
