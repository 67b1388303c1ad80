"""benchmarks.results and its tables (benchmarks.result_tables): means over seeds, curves, per-label means, failures."""

from __future__ import annotations

from pathlib import Path

from benchmarks.result_tables import (
    Outcome,
    Run,
    by_label_table,
    curve_points,
    curves_table,
    mean_and_spread,
    summary_table,
    time_to_quality_table,
)

#: The real frames' and the constant texture's levels that a report names beside its tables.
REFERENCE_LEVELS = {"surface_consistency_real": 0.05, "warp_error_real": 0.06, "texture_psnr_constant": 13.0}


def outcome(name: str, seed: int, psnr: float, batches: int, curves: list[dict] | None = None,
            by_label: dict | None = None) -> Outcome:
    metrics = {"psnr": psnr, "psnr_by_label": by_label or {}}
    return Outcome(Run(name, seed, (), Path(f"{name}-seed{seed}")), metrics, 600.0, batches, curves or [])


def test_mean_and_spread_over_seeds() -> None:
    assert mean_and_spread([20.0, 22.0]) == "21.0000 ± 1.4142"  # sample standard deviation
    assert mean_and_spread([20.0]) == "20.0000"
    assert mean_and_spread([20.0, None]) == "n/a"  # a run without the measure: no mean that hides it


def test_curve_points_read_the_runs_own_clock_and_find_a_late_decline() -> None:
    # A run resumed across calls: wall_s goes on from the checkpoint, so the quarter is of the whole run.
    curve = [{"wall_s": 100.0, "val/psnr": 18.0}, {"wall_s": 290.0, "val/psnr": 19.0},
             {"wall_s": 700.0, "val/psnr": 21.5}, {"wall_s": 1200.0, "val/psnr": 21.0}]
    assert curve_points(curve) == (19.0, 21.5, 700.0, 21.0)
    assert curve_points([{"wall_s": 500.0, "val/psnr": 18.0}, {"wall_s": 600.0, "val/psnr": 19.0}]) == (
        18.0, 19.0, 600.0, 19.0)
    assert curve_points(curve[:1]) is None


def test_summary_groups_seeds_by_row_in_order() -> None:
    table = summary_table([outcome("triton", 0, 20.0, 1000), outcome("no_texture", 0, 19.0, 1200),
                           outcome("triton", 1, 22.0, 1100)]).splitlines()
    assert [line.split(" | ")[0] for line in table[2:]] == ["| triton", "| no_texture"]
    triton = table[2].split(" | ")
    assert triton[1] == "2" and triton[2] == "21.0000 ± 1.4142" and triton[-1] == "1050 |"
    assert table[3].split(" | ")[2] == "19.0000"


def test_curves_table_marks_runs_without_curves() -> None:
    curve = [{"wall_s": 10.0, "val/psnr": 15.0, "val/psnr_masked": 10.0},
             {"wall_s": 40.0, "val/psnr": 16.5, "val/psnr_masked": 11.25}]
    lines = curves_table([outcome("triton", 0, 20.0, 10, curve), outcome("triton", 1, 20.0, 10)]).splitlines()
    assert lines[2] == "| triton | 0 | 15.00 | 16.50 (40) | 16.50 | 10.00 | 11.25 (40) | 11.25 |"
    assert lines[3] == "| triton | 1 | n/a | n/a | n/a | n/a | n/a | n/a |"


def quality_curve(*points: tuple[float, float, float]) -> list[dict]:
    """Validation rows (wall s, val/psnr_masked, val/surface_consistency), 100 batches apart."""
    return [{"batch": 100.0 * (i + 1), "wall_s": wall, "val/psnr_masked": psnr, "val/surface_consistency": sc}
            for i, (wall, psnr, sc) in enumerate(points)]


def test_time_to_quality_is_the_first_validation_at_the_first_rows_final_quality() -> None:
    defaults = [outcome("triton", 0, 20.0, 10, quality_curve((150, 15.0, 0.02), (300, 16.0, 0.012),
                                                             (450, 17.0, 0.010))),
                outcome("triton", 1, 20.0, 10, quality_curve((150, 15.5, 0.02), (300, 16.5, 0.011),
                                                             (450, 16.0, 0.008)))]
    # Target: psnr_masked 16.5, surface consistency 0.009 (the means at the last validations).
    fast = outcome("fast", 0, 20.0, 10, quality_curve((50, 16.0, 0.005), (100, 16.6, 0.01), (150, 16.8, 0.0085)))
    sharp_only = outcome("sharp", 0, 20.0, 10, quality_curve((100, 18.0, 0.02), (450, 18.0, 0.0095)))
    lines = time_to_quality_table([*defaults, fast, sharp_only, outcome("none", 0, 20.0, 10)]).splitlines()
    assert lines[0] == "Target, triton's mean at its runs' last validations: `val/psnr_masked` 16.5, " \
                       "`val/surface_consistency` 0.009"
    assert lines[2] == "| method | seed | reached at s | at batch | of the run's s | val/psnr_masked | " \
                       "val/surface_consistency |"
    # Neither default run ends at both means: seed 0 is not steady enough, seed 1 not sharp enough.
    assert lines[4] == "| triton | 0 | not reached |  | 450 | n/a | n/a |"
    assert lines[5] == "| triton | 1 | not reached |  | 450 | n/a | n/a |"
    assert lines[6] == "| fast | 0 | 150 | 300 | 150 | 16.8 | 0.0085 |"  # both measures at once, not each alone
    assert lines[7].startswith("| sharp | 0 | not reached |")  # sharp enough, never steady enough
    assert lines[8] == "| none | 0 | not reached |  | n/a | n/a | n/a |"
    assert time_to_quality_table([outcome("triton", 0, 20.0, 10)]).startswith("n/a (the first row's runs")


def test_per_label_means_skip_labels_a_run_lacks() -> None:
    table = by_label_table([outcome("triton", 0, 20.0, 10, by_label={"table": 20.0, "can": 12.0}),
                            outcome("triton", 1, 20.0, 10, by_label={"table": 22.0, "can": None})],
                           "psnr_by_label", 2).splitlines()
    assert table[0] == "| method | table | can |"
    assert table[2] == "| triton | 21.00 | 12.00 |"
    # Evaluations kept from before a per-label metric existed: the table says so instead of failing.
    assert "rerun `triton-s2r eval`" in by_label_table([outcome("triton", 0, 20.0, 10)], "colour_error_by_label", 3)


def composed_run(overrides: list[str]):
    from hydra import compose, initialize_config_module

    with initialize_config_module("triton_s2r.conf", version_base="1.3"):
        return compose("train", overrides=[o for o in overrides if not o.startswith("hydra.")])


def test_demo_recipe_trains_the_demo_and_benchmark_recipe_its_budget() -> None:
    from benchmarks.results import base_overrides

    demo = composed_run([*base_overrides("DATA", 600, Path("RUN"), gpu=True, paired=False, recipe="demo"), "seed=1"])
    assert demo.data.root == "DATA" and demo.seed == 1
    assert demo.system.crop_size == 96 and demo.data.steps_per_epoch * demo.trainer.max_epochs == 600
    assert demo.loss.r1_interval == 16 and demo.trainer.max_time is None  # 600 batches, not the demo's time budget
    bench = composed_run(base_overrides("DATA", 600, Path("RUN"), gpu=True, paired=False))
    assert bench.system.crop_size == 256 and bench.trainer.max_time == "00:00:10:00"
    assert bench.data.steps_per_epoch == 250  # validations and checkpoint writes every 250 batches in a 10-minute run
    assert bench.data.sim_source == "render"


def test_a_failed_run_is_named_with_its_reason(tmp_path: Path) -> None:
    import subprocess

    from benchmarks.result_tables import failures_section
    from benchmarks.results import failure_reason

    oom, other = Run("triton", 0, (), tmp_path / "a"), Run("triton", 1, (), tmp_path / "b")
    oom.run_dir.mkdir()
    (oom.run_dir / "train.log").write_text("...\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1 GiB\n")
    train = subprocess.CalledProcessError(1, ["python", "-m", "triton_s2r.train", "data.root=D"])
    evaluate = subprocess.CalledProcessError(2, ["python", "-m", "triton_s2r.cli", "eval", "RUN", "D"])
    assert failure_reason(oom, train).startswith("out of GPU memory")
    assert failure_reason(other, evaluate).startswith("`triton-s2r eval` exited with status 2")
    section = failures_section([(oom, "out of GPU memory"), (other, "status 2")])
    assert "**Failed runs (2)**" in section and "- triton, seed 1: status 2" in section
    assert failures_section([]) == ""


def test_memory_shortfalls_name_the_gpus_that_cannot_hold_their_runs() -> None:
    from benchmarks.results import CONTEXT_GIB, memory_shortfalls

    peaks = {"triton": 14.0, "no_texture": 8.0}
    fits = {"0": ["triton"] * 4 + ["no_texture"] * 4}  # 88 GiB and contexts
    full = {"1": ["triton"] * 12}  # 168 GiB and contexts: the 2026-11-30 call that ran out of memory
    lines = memory_shortfalls({**fits, **full}, peaks, {"0": 140.0, "1": 140.0})
    assert len(lines) == 1 and lines[0].startswith("GPU 1 (140 GiB) would need 175 GiB for its 12 runs")
    assert "triton 14.0 GiB x12" in lines[0] and f"{CONTEXT_GIB} GiB of CUDA context" in lines[0]
    # A row whose compile run recorded no peak counts its context only.
    assert memory_shortfalls({"0": ["oracle"] * 12}, peaks, {"0": 140.0}) == []


def test_report_holds_every_section_and_the_failed_runs() -> None:
    from benchmarks.result_tables import report

    done = [Outcome(Run("triton", s, (), Path(f"t{s}")), {**REFERENCE_LEVELS, "psnr": 21.0 + s}, 900.0, 880, [])
            for s in (0, 1)]
    text = report("# Results\n\n", done, [(Run("triton", 2, (), Path("t2")), "out of GPU memory")], ("psnr",), "")
    assert text.startswith("# Results\n\nPSNR and SSIM") and "own levels are 0.0500 and 0.0600" in text
    assert "**Failed runs (1)**" in text and "- triton, seed 2: out of GPU memory" in text
    assert "| triton | 2 | 21.5000 ± 0.7071 |" in text  # the summary: the two finished seeds
    assert "| triton | 1 | 22.0000 | 900 | 880 |" in text  # every run


def test_downstream_references_reuse_the_files_a_call_left_and_train_the_others(tmp_path, monkeypatch) -> None:
    """Each source and seed is one file: a rerun trains only what is missing (here: the sim floor of seed 1)."""
    import json
    import subprocess

    from benchmarks import results

    for source, seed in (("real", 0), ("real", 1), ("sim", 0)):
        (tmp_path / f"downstream-{source}-seed{seed}.json").write_text(json.dumps(
            {"joint_error_deg": 60.0 + seed, "joint_error_deg_train_states": 40.0, "object_position_error_cm": 25.0}))
    trained = []

    def fake_run(command, check, env):  # the CLI's regressor training, recorded instead of run
        trained.append(command[command.index("--train-on") + 1:command.index("--train-on") + 4])
        out = Path(command[command.index("--out") + 1])
        out.write_text(json.dumps({"joint_error_deg": 80.0, "joint_error_deg_train_states": 70.0,
                                   "object_position_error_cm": 30.0}))

    monkeypatch.setattr(subprocess, "run", fake_run)
    section = results.downstream_references("DATA", [0, 1], tmp_path, {})
    assert trained == [["sim", "--seed", "1"]]
    assert "| real | 1 | 61.0000 | 40.0000 | 25.0000 |" in section and "| sim | 1 | 80.0000 |" in section


def test_the_table_is_written_as_runs_finish_and_whole_at_the_end(tmp_path, monkeypatch) -> None:
    """benchmarks.results' main: a partial table once the first run finishes, kept if the call ends there."""
    import sys
    import threading
    import time

    from benchmarks import results

    out, first_done, seen = tmp_path / "table.md", threading.Event(), {}

    def train_and_evaluate(run: Run, *args, **kwargs) -> Outcome:
        if run.seed == 1:  # finishes second: it reads what the first left
            assert first_done.wait(30)
            for _ in range(300):  # main writes the partial table after collecting seed 0
                if out.is_file():
                    break
                time.sleep(0.1)
            seen["partial"] = out.read_text()
        outcome = Outcome(run, {**REFERENCE_LEVELS, "psnr": 21.0 + run.seed}, 900.0, 880, [])
        if run.seed == 0:
            first_done.set()
        return outcome

    monkeypatch.setattr(results, "train_and_evaluate", train_and_evaluate)
    monkeypatch.setattr(sys, "argv", ["results", "--data", str(tmp_path), "--cpu", "--concurrent", "--methods",
                                      "triton", "--seeds", "1", "0", "--runs", str(tmp_path / "runs"),
                                      "--out", str(out)])
    results.main()
    assert "**Partial: 1 of 2 runs finished.**" in seen["partial"]
    assert "| triton | 0 | 21.0000 |" in seen["partial"] and "| triton | 1 | 22.0000" not in seen["partial"]
    final = out.read_text()
    assert "Partial" not in final
    assert final.index("| triton | 1 | 22.0000") < final.index("| triton | 0 | 21.0000")  # the seeds' order as given


def test_compile_in_background_skips_the_untimed_compile_runs(tmp_path, monkeypatch) -> None:
    """--compile --compile-in-background: every run carries the option, and no compile run comes first."""
    import sys

    from benchmarks import results

    trained: list[Run] = []

    def train_and_evaluate(run: Run, *args, **kwargs) -> Outcome:
        trained.append(run)
        return Outcome(run, {**REFERENCE_LEVELS, "psnr": 21.0}, 900.0, 880, [])

    def fill_compile_cache(*args, **kwargs) -> None:
        raise AssertionError("no untimed compile runs with --compile-in-background")

    monkeypatch.setattr(results, "train_and_evaluate", train_and_evaluate)
    monkeypatch.setattr(results, "fill_compile_cache", fill_compile_cache)
    monkeypatch.setattr(results.torch.cuda, "device_count", lambda: 1)  # one GPU, trained on by the stand-in
    monkeypatch.setattr(sys, "argv", ["results", "--data", str(tmp_path), "--concurrent", "--compile",
                                      "--compile-in-background", "--methods", "triton", "oracle",
                                      "--variant", "v", "loss.r1_gamma=1", "--runs", str(tmp_path / "runs")])
    results.main()
    assert sorted(run.name for run in trained) == ["oracle", "triton", "v"]
    assert all(run.overrides[-1] == "system.compile_in_background=true" for run in trained)
    assert "loss.r1_gamma=1" in next(run for run in trained if run.name == "v").overrides


def test_compile_in_background_needs_compile(tmp_path, monkeypatch, capsys) -> None:
    import sys

    import pytest

    from benchmarks import results

    monkeypatch.setattr(sys, "argv", ["results", "--data", str(tmp_path), "--compile-in-background"])
    with pytest.raises(SystemExit):
        results.main()
    assert "--compile-in-background is a way to --compile: add --compile" in capsys.readouterr().err


def test_gpu_runs_without_a_gpu_ask_for_cpu(tmp_path, monkeypatch, capsys) -> None:
    """Without --cpu the runs render on a GPU: where torch sees none, main stops before any run and says what to add."""
    import sys

    import pytest

    from benchmarks import results

    monkeypatch.setattr(results.torch.cuda, "device_count", lambda: 0)
    monkeypatch.setattr(results, "train_and_evaluate", lambda *args, **kwargs: pytest.fail("no run may start"))
    monkeypatch.setattr(sys, "argv", ["results", "--data", str(tmp_path), "--methods", "triton",
                                      "--runs", str(tmp_path / "runs")])
    with pytest.raises(SystemExit):
        results.main()
    assert "torch sees no CUDA GPU here: add --cpu" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()
