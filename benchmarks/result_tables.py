"""The tables of ``benchmarks.results``: finished runs (``Outcome``) as markdown, with means over seeds and curves."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path

#: The measures of ``triton-s2r eval`` in the tables, one column each.
COLUMNS = ("psnr", "psnr_masked", "ssim", "haarpsi", "haarpsi_masked", "colour_error_masked",
           "colour_error_assigned_masked", "contrast_ratio_masked", "detail_ratio_masked", "texture_psnr",
           "texture_colour_psnr", "real_label_iou_masked", "surface_consistency", "warp_error")
#: ``triton-s2r downstream`` measures (``--downstream``): a pose regressor trained on each run's translations,
#: tested on new states and on the real frames of the states it was trained on (the domain gap alone).
DOWNSTREAM_COLUMNS = ("joint_error_deg", "joint_error_deg_train_states", "object_position_error_cm")


@dataclass(frozen=True)
class Run:
    """One training run: a row of the table (method or variant) with one seed."""

    name: str
    seed: int
    overrides: tuple[str, ...]
    run_dir: Path


@dataclass(frozen=True)
class Outcome:
    """A finished run: its metrics (``triton-s2r eval`` JSON), training wall seconds and batches trained.

    The seconds are the run's own clock at its last validation: a run resumed across calls counts every part.
    """

    run: Run
    metrics: dict
    train_seconds: float
    batches: int
    curves: list[dict]


def failures_section(failures: list[tuple[Run, str]]) -> str:
    """The table's note on runs that failed: which, why, and that a rerun with the same ``--runs`` retries them."""
    if not failures:
        return ""
    lines = [f"- {run.name}, seed {run.seed}: {reason}" for run, reason in failures]
    return (f"**Failed runs ({len(failures)})**, not in the tables (rerun the same command with the same `--runs` to "
            "retry only them; finished runs and evaluations are kept):\n\n" + "\n".join(lines) + "\n\n")


def cell(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def run_row(outcome: Outcome, columns: tuple[str, ...] = COLUMNS) -> str:
    values = " | ".join(cell(outcome.metrics.get(k)) for k in columns)
    return (f"| {outcome.run.name} | {outcome.run.seed} | {values} | {outcome.train_seconds:.0f} | "
            f"{outcome.batches} |")


def mean_and_spread(values: list[float | None]) -> str:
    """'mean ± sample standard deviation' (just the value for a single run; n/a where a run has none)."""
    present = [v for v in values if v is not None]
    if len(present) < len(values):
        return "n/a"
    if len(present) == 1:
        return f"{present[0]:.4f}"
    return f"{statistics.fmean(present):.4f} ± {statistics.stdev(present):.4f}"


def curve_points(curve: list[dict], key: str = "val/psnr") -> tuple[float, float, float, float] | None:
    """``key`` early, at its best and at the end of a run's validation curve.

    Returns (the value at the last validation within the first quarter of the run's wall time, the best value,
    the wall time of that best in s, the value at the end); a best well above the end is a late decline.
    """
    points = [(row["wall_s"], row[key]) for row in curve if key in row]
    if len(points) < 2:
        return None
    early = [value for wall, value in points if wall <= points[-1][0] / 4] or [points[0][1]]
    best_wall, best = max(points, key=lambda point: point[1])
    return early[-1], best, best_wall, points[-1][1]


def curves_table(outcomes: list[Outcome]) -> str:
    """Per run: validation PSNR and PSNR_masked after a quarter of the training time, at their best and at the end."""
    lines = ["| method | seed | val/psnr at 1/4 | best (at s) | at the end | val/psnr_masked at 1/4 | best (at s) "
             "| at the end |", "|---|---|---|---|---|---|---|---|"]
    for o in outcomes:
        cells = []
        for key in ("val/psnr", "val/psnr_masked"):
            points = curve_points(o.curves, key)
            cells += (["n/a"] * 3 if points is None
                      else [f"{points[0]:.2f}", f"{points[1]:.2f} ({points[2]:.0f})", f"{points[3]:.2f}"])
        lines.append(f"| {o.run.name} | {o.run.seed} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


#: The quality of the time-to-quality table: the objects and robot, and the steadiness across views.
QUALITY = {"val/psnr_masked": "higher", "val/surface_consistency": "lower"}


def first_reached(curve: list[dict], targets: dict[str, float]) -> dict | None:
    """The first validation row of ``curve`` at every target of ``targets`` (``QUALITY``'s keys), or None."""
    def at(row: dict, key: str) -> bool:
        return key in row and (row[key] >= targets[key] if QUALITY[key] == "higher" else row[key] <= targets[key])
    return next((row for row in curve if all(at(row, key) for key in targets)), None)


def time_to_quality_table(outcomes: list[Outcome]) -> str:
    """Per run: when its validation first reached the quality that the first row's runs end with.

    The quality is the first row's mean over its seeds of ``QUALITY``'s measures at their last validation: with the
    defaults as the first row trained for 450 s, a run of another row that reaches it within 150 s meets issue 5/6's
    time-to-quality target. A single validation decides, so a noisy curve can reach it early by chance.
    """
    reference = by_row(outcomes)[outcomes[0].run.name]
    ends = [o.curves[-1] for o in reference if o.curves]
    if not ends or any(key not in end for end in ends for key in QUALITY):
        return f"n/a (the first row's runs have no curves with {' and '.join(f'`{k}`' for k in QUALITY)})"
    targets = {key: statistics.fmean(end[key] for end in ends) for key in QUALITY}
    lines = [f"Target, {outcomes[0].run.name}'s mean at its runs' last validations: "
             + ", ".join(f"`{key}` {value:.4g}" for key, value in targets.items()) + "\n",
             "| method | seed | reached at s | at batch | of the run's s | " + " | ".join(QUALITY) + " |",
             "|" + "---|" * (len(QUALITY) + 5)]
    for o in outcomes:
        row = first_reached(o.curves, targets)
        total = f"{o.curves[-1]['wall_s']:.0f}" if o.curves else "n/a"
        cells = (["not reached", "", total, *(["n/a"] * len(QUALITY))] if row is None else
                 [f"{row['wall_s']:.0f}", f"{row['batch']:.0f}", total, *(f"{row[k]:.4g}" for k in QUALITY)])
        lines.append(f"| {o.run.name} | {o.run.seed} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def by_row(outcomes: list[Outcome]) -> dict[str, list[Outcome]]:
    """The outcomes grouped by row name (method or variant), rows in their first-seen order."""
    groups: dict[str, list[Outcome]] = {}
    for outcome in outcomes:
        groups.setdefault(outcome.run.name, []).append(outcome)
    return groups


def summary_table(outcomes: list[Outcome]) -> str:
    """Per row name: every metric's mean ± standard deviation over its seeds, and the mean batches."""
    columns = COLUMNS + tuple(k for k in DOWNSTREAM_COLUMNS if k in outcomes[0].metrics)
    lines = ["| method | seeds | " + " | ".join(columns) + " | batches |", "|" + "---|" * (len(columns) + 3)]
    for name, group in by_row(outcomes).items():
        cells = " | ".join(mean_and_spread([o.metrics.get(k) for o in group]) for k in columns)
        batches = statistics.fmean(o.batches for o in group)
        lines.append(f"| {name} | {len(group)} | {cells} | {batches:.0f} |")
    return "\n".join(lines)


def by_label_table(outcomes: list[Outcome], key: str, digits: int) -> str:
    """Per row name: the mean over seeds of a per-label metric (``psnr_by_label``, ``warp_error_by_label``)."""
    labels = next((list(o.metrics[key]) for o in outcomes if key in o.metrics), None)
    if labels is None:  # evaluations kept from before the metric existed
        return f"n/a (no run's metrics hold `{key}`: rerun `triton-s2r eval`)"
    lines = ["| method | " + " | ".join(labels) + " |", "|" + "---|" * (len(labels) + 1)]
    for name, group in by_row(outcomes).items():
        cells = []
        for label in labels:
            values = [v for o in group if (v := (o.metrics.get(key) or {}).get(label)) is not None]
            cells.append(f"{statistics.fmean(values):.{digits}f}" if values else "n/a")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def report(header: str, outcomes: list[Outcome], failures: list[tuple[Run, str]], columns: tuple[str, ...],
           references: str) -> str:
    """The results markdown of finished ``outcomes`` (at least one).

    In order: ``header``, what the measures mean, the ``failures``, the means over seeds, every run (``columns``),
    the downstream ``references`` (markdown, may be empty), the curves, the time to quality and the per-label
    tables.
    """
    real = outcomes[0].metrics
    per_run = ["| method | seed | " + " | ".join(columns) + " | train wall s | batches |",
               "|" + "---|" * (len(columns) + 4), *(run_row(o, columns) for o in outcomes)]
    return (
        header +
        "PSNR and SSIM: higher is better (translation vs the paired path-traced frame); `_masked`: objects and "
        "robot only. Colour error (each label's mean colour against the real one's; 0 for the real frames): lower "
        "is better. `contrast_ratio_masked`: how much the objects and robot stand out from their surroundings, "
        "translation over real frame; 1 as in reality, near 0 faded into them. `detail_ratio_masked`: how much "
        "their colours vary within each (patterns, letters), translation over real frame; near 0 flat or blurred. "
        "`real_label_iou_masked`: how well "
        "the real->sim translator labels the real frames' objects and robot (IoU with their true labels), higher "
        "is better. Surface consistency and warp error: lower is "
        "better; the real frames' own levels are "
        f"{real['surface_consistency_real']:.4f} and {real['warp_error_real']:.4f}. `texture_psnr`: the learned "
        "textures against the hidden albedo, higher is better; a texture constant on each label scores "
        f"{cell(real.get('texture_psnr_constant'))}. `texture_colour_psnr`: the same with one colour fit for all "
        "labels (each label's own colour counts); the labels' true colours shuffled among them score "
        f"{cell(real.get('texture_colour_psnr_shuffled'))} (chance), each label's true mean colour about "
        f"{cell(real.get('texture_psnr_constant'))}.\n\n"
        + failures_section(failures) +
        f"Mean ± standard deviation over seeds:\n\n{summary_table(outcomes)}\n\n"
        f"Every run:\n\n" + "\n".join(per_run) + "\n\n" + references +
        f"Validation during training (`RUN/curves.csv`), a quarter of the way, at its best and at the end:\n\n"
        f"{curves_table(outcomes)}\n\n"
        f"Time to quality (validation during training):\n\n{time_to_quality_table(outcomes)}\n\n"
        f"PSNR per label (dB, `psnr_by_label`, mean over seeds):\n\n"
        f"{by_label_table(outcomes, 'psnr_by_label', 2)}\n\n"
        f"Colour error per label (`colour_error_by_label`: the label's mean colour against the real one's, mean "
        f"over seeds):\n\n{by_label_table(outcomes, 'colour_error_by_label', 3)}\n\n"
        f"Contrast ratio per label (`contrast_ratio_by_label`: how much the label stands out from its surroundings, "
        f"translation over real; near 0: faded, mean over seeds):\n\n"
        f"{by_label_table(outcomes, 'contrast_ratio_by_label', 2)}\n\n"
        f"Detail ratio per label (`detail_ratio_by_label`: how much the label's colours vary within it, translation "
        f"over real; near 0: flat or blurred, mean over seeds):\n\n"
        f"{by_label_table(outcomes, 'detail_ratio_by_label', 2)}\n\n"
        f"How the real->sim translator labels the real frames (`real_label_iou_by_label`, IoU with their true labels, "
        f"mean over seeds):\n\n{by_label_table(outcomes, 'real_label_iou_by_label', 2)}\n\n"
        f"Warp error per label (`warp_error_by_label`, mean over seeds):\n\n"
        f"{by_label_table(outcomes, 'warp_error_by_label', 4)}\n"
    )
