"""benchmarks.step_memory on the committed tiny dataset: what the generator step keeps, written where asked."""

from __future__ import annotations

import sys

from benchmarks import step_memory

#: The shipped recipe at the tiny dataset's scale (narrow networks, 48 px crops, eager) so that it runs in seconds.
SMALL = ["system.compile=false", "system.crop_size=48", "system.resolution_schedule=[[0,48]]",
         "loss.surface_grid_size=32",
         "model.translator.generator_sim.base_channels=8", "model.translator.generator_sim.num_res_blocks=1",
         "model.discriminator_sim.base_channels=8", "model.discriminator_sim.num_scales=2",
         "model/texture@model.translator.texture=neural_tiny", "render=embree", "trainer=cpu"]


def test_census_counts_each_network_and_the_padded_copies(data_root) -> None:
    saved, crop = step_memory.census(str(data_root), 4, tuple(SMALL))
    assert crop == 48
    networks = {step_memory.network_of(s.network) for s in saved}
    # Every network of the generator step saves something, the loss terms too.
    assert {"generator_sim.encoder", "generator_sim.decoder", "generator_real.encoder", "generator_real.decoder",
            "discriminator_sim", "discriminator_real", "(losses)"} <= networks
    assert all(s.nbytes > 0 for s in saved)
    # The generators' first 7x7 convolutions pad by 3 with reflection: their padded inputs (48 + 6) are kept.
    assert any(s.shape[-2:] == (54, 54) and s.network.startswith("model.generator_sim.encoder") for s in saved)


def test_padded_shapes_and_network_names() -> None:
    assert step_memory.is_padded((8, 128, 260, 260), 256) and step_memory.is_padded((8, 256, 66, 66), 256)
    assert step_memory.is_padded((8, 6, 54, 54), 48) and step_memory.is_padded((8, 16, 26, 26), 48)
    assert not step_memory.is_padded((8, 128, 256, 256), 256) and not step_memory.is_padded((8, 64, 64, 64), 256)
    assert not step_memory.is_padded((8, 3, 97, 97), 256) and not step_memory.is_padded((260, 260), 256)
    assert step_memory.network_of("model.generator_sim.decoder.layers.3") == "generator_sim.decoder"
    assert step_memory.network_of("discriminator_real.scales.0") == "discriminator_real"


def test_the_table_goes_into_its_section(data_root, tmp_path, monkeypatch, capsys) -> None:
    doc = tmp_path / "benchmarks.md"
    monkeypatch.setattr(step_memory, "write_section", lambda key, title, text: doc.write_text(f"{key}\n{text}"))
    monkeypatch.setattr(sys, "argv", ["step_memory", "--data", str(data_root), *SMALL])
    step_memory.main()
    text = doc.read_text()
    assert text.startswith("step-memory:") and "| generator_real.decoder |" in text
    total = float(text.split("**")[1].split(" MiB")[0].replace(",", ""))
    rows = [line.split(" | ") for line in text.splitlines()[text.splitlines().index("| network | MiB | share |") + 2:]]
    rows = rows[:next(i for i, row in enumerate(rows) if len(row) < 3)]  # up to the blank line after the table
    counted = sum(float(row[1].replace(",", "")) for row in rows)
    assert abs(counted - total) < 0.1 * len(rows) + 1  # every MiB counted once, in one network's row
    assert "Kept for the backward pass" in capsys.readouterr().out
