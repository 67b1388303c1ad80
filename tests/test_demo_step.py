"""benchmarks.demo_step on the committed tiny dataset: a row per variant and precision, written where asked."""

from __future__ import annotations

import sys

from benchmarks import demo_step


def test_rows_for_each_variant_and_precision_and_the_section_written(data_root, tmp_path, monkeypatch, capsys) -> None:
    doc = tmp_path / "benchmarks.md"
    monkeypatch.setattr(demo_step, "write_section", lambda key, title, table: doc.write_text(f"{key}\n{table}"))
    monkeypatch.setattr(sys, "argv", ["demo_step", "--data", str(data_root), "--steps", "1", "--warmup", "1",
                                      "--precisions", "32-true", "bf16-mixed",
                                      "--variant", "narrow_d", "model.discriminator_sim.base_channels=16"])
    demo_step.main()
    rows = [line for line in doc.read_text().splitlines() if line.startswith("| narrow_d |")]
    assert [row.split(" | ")[1] for row in rows] == ["32-true", "bf16-mixed"]
    assert all(float(row.split(" | ")[2]) > 0 for row in rows)  # seconds per batch, whatever they are
    assert doc.read_text().startswith("demo-step:") and "narrow_d" in capsys.readouterr().out
