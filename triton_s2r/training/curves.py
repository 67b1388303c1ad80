"""Training curves: every validation's ``val/*`` measures against batches and wall time, kept in the run.

``TrainingCurves`` (a Lightning callback, added by ``triton-s2r train`` when the data has a test split) appends one
row per validation to ``RUN/curves.csv`` (columns ``batch``, ``wall_s``, ``epoch``, the measures and the
``TRAINING_SNAPSHOT`` values), redraws ``RUN/plots/curves.png`` (one panel per measure, one each of D_B's and
D_A's scores and one of every label's PSNR; batches below, minutes of training above) and writes the translated
validation sequence to ``RUN/previews/val_sequence.mp4``, also logged to W&B as a video when that logger is used;
when the video cannot be written (no ffmpeg, a full disk) the callback warns once and training goes on without it.
A resumed run continues the file (wall time goes on from its last row). Validation runs after every epoch
(``data.steps_per_epoch`` batches) or every ``trainer.val_check_interval`` batches.
"""

from __future__ import annotations

import csv
import io
import math
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytorch_lightning as pl
import torch
from pytorch_lightning.utilities import rank_zero_only, rank_zero_warn

from triton_s2r.runs.run_dir import RunDir
from triton_s2r.utils.files import atomic_write

if TYPE_CHECKING:
    from collections.abc import Callable

    from triton_s2r.training.system import TritonSystem

#: Measures drawn, in panel order, with the direction that is better.
PLOTTED = {"val/psnr": "higher", "val/psnr_masked": "higher", "val/haarpsi": "higher", "val/ssim": "higher",
           "val/surface_consistency": "lower", "val/warp_error": "lower"}


#: D_B's scores, drawn in one panel: the training photos' running ahead of the held-out ones' is it memorising them.
SCORES = {"train/photo_score": "training photos", "val/train_real/photo_score": "training photos (validated)",
          "val/photo_score": "held-out photos", "train/translation_score": "translations"}

#: D_A's scores, drawn in the next panel: with D_B's, which discriminator pulls away from its generator.
SIM_SCORES = {"train/render_score": "renders", "train/real_to_sim_score": "photos translated"}

#: Each phase's largest gradient norm since the previous validation, drawn in one panel: a spike before a fall.
GRADIENT_PEAKS = {"train/gradient_norm_d_peak": "discriminators", "train/gradient_norm_g_peak": "generators, textures"}

#: The prefix of the measures on paired training photos (``data.val_train_frames``), drawn beside the test frames'.
TRAIN_REAL = "val/train_real/"

#: The prefix of each label's PSNR (``val/psnr/<label>``), drawn in one panel.
LABEL_PSNR = "val/psnr/"

#: Training values recorded beside each validation's measures, as last logged before it (one batch's, not a mean):
#: D_B's score of its training photos against ``val/photo_score`` on held-out ones shows it memorising them; against
#: its score of the translations, how far apart it tells them; D_A's two scores the same for the other direction.
#: The gradient norms' ``_peak`` and ``gradient_clipped_`` (with a relative clip) cover every batch since the last
#: validation instead.
TRAINING_SNAPSHOT = ("train/photo_score", "train/translation_score", "train/render_score", "train/real_to_sim_score",
                     "train/adversarial", "train/loss_d", "train/gradient_norm_d", "train/gradient_norm_g",
                     "train/gradient_norm_d_peak", "train/gradient_norm_g_peak", "train/gradient_clipped_d",
                     "train/gradient_clipped_g")


def read_curves(path: Path) -> list[dict[str, float]]:
    """Rows of a ``curves.csv`` (empty cells dropped); [] if there is no file."""
    if not path.is_file():
        return []
    with path.open(newline="") as f:
        return [{k: float(v) for k, v in row.items() if v not in ("", None)} for row in csv.DictReader(f)]


def write_curves(path: Path, rows: list[dict[str, float]]) -> None:
    """Write rows as CSV atomically; columns: ``batch``, ``wall_s``, ``epoch``, then the measures, sorted."""
    measures = sorted({k for row in rows for k in row} - {"batch", "wall_s", "epoch"})
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=["batch", "wall_s", "epoch", *measures], lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: (int(v) if k in ("batch", "epoch") else f"{v:.6g}") for k, v in row.items()})
    with atomic_write(path) as tmp:
        tmp.write_text(buffer.getvalue())


def minutes_axis(batches: np.ndarray, minutes: np.ndarray) -> tuple[Callable[[np.ndarray], np.ndarray],
                                                                    Callable[[np.ndarray], np.ndarray]]:
    """The maps between batches and minutes of the curves' top axis, each the other's inverse.

    Piecewise linear through the validations, and on beyond them with the first and last segments' slopes, so that
    the minute ticks before the first validation and after the last keep their places instead of piling up on the
    ends of the validated range.

    Args:
        batches: (N,) the validations' batches, strictly increasing, N >= 2.
        minutes: (N,) their minutes of training, strictly increasing.

    Returns:
        (batches to minutes, minutes to batches), each taking and returning an array.
    """
    reach = 10.0 * (batches[-1] - batches[0])
    first = (minutes[1] - minutes[0]) / (batches[1] - batches[0])
    last = (minutes[-1] - minutes[-2]) / (batches[-1] - batches[-2])
    b = np.concatenate([[batches[0] - reach], batches, [batches[-1] + reach]]).astype(float)
    m = np.concatenate([[minutes[0] - first * reach], minutes, [minutes[-1] + last * reach]]).astype(float)
    return (lambda x: np.interp(x, b, m)), (lambda x: np.interp(x, m, b))


def _with_training_photos(name: str, rows: list[dict[str, float]]) -> dict[str, str]:
    """A panel's lines: ``name`` alone, or beside its twin on the training photos where ``rows`` hold it."""
    twin = TRAIN_REAL + name.removeprefix("val/")
    if not any(twin in row for row in rows):
        return {name: ""}
    return {name: "test frames", twin: "training photos"}


def plot_curves(rows: list[dict[str, float]], out: Path) -> None:
    """Draw ``rows`` as a PNG at ``out``, atomically: a panel per measure of ``PLOTTED``, then the panels of groups.

    A measure also validated on training photos (``val/train_real/...``) shares its panel. The groups: D_B's and
    D_A's scores, the gradient norms' peaks, every label's PSNR. A panel with nothing in
    ``rows`` is left out. Each panel plots its values against batches (bottom axis) and minutes of training (top axis).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [(f"{name.removeprefix('val/')} ({better} is better)", _with_training_photos(name, rows))
              for name, better in PLOTTED.items()]
    panels.append(("D_B's mean logit (1: real, 0: translated)", SCORES))
    panels.append(("D_A's mean logit (1: render, 0: translated)", SIM_SCORES))
    panels.append(("largest gradient norm since the last validation", GRADIENT_PEAKS))
    per_label = sorted({name for row in rows for name in row if name.startswith(LABEL_PSNR)})
    panels.append(("psnr per label (higher is better)", {name: name.removeprefix(LABEL_PSNR) for name in per_label}))
    panels = [(title, lines) for title, lines in panels if any(name in row for row in rows for name in lines)]
    if not panels:
        return
    columns = min(3, len(panels))
    rows_of_panels = math.ceil(len(panels) / columns)
    figure, axes = plt.subplots(rows_of_panels, columns, figsize=(4.2 * columns, 3.2 * rows_of_panels), squeeze=False,
                                constrained_layout=True)
    batches = np.array([row["batch"] for row in rows])
    minutes = np.array([row["wall_s"] / 60 for row in rows])
    for ax, (title, lines) in zip(axes.flat, panels, strict=False):
        for name, label in lines.items():
            points = [(row["batch"], row[name]) for row in rows if name in row]
            if points:
                ax.plot(*zip(*points, strict=True), marker="o", markersize=3, label=label)
        if any(lines.values()):
            ax.legend(fontsize=7, ncol=2 if len(lines) > 5 else 1)
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("batches")
        ax.grid(alpha=0.3)
        if len(rows) > 1 and np.all(np.diff(batches) > 0) and np.all(np.diff(minutes) > 0):
            top = ax.secondary_xaxis("top", functions=minutes_axis(batches, minutes))
            top.set_xlabel("minutes of training", fontsize=8)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(out) as tmp:
        figure.savefig(tmp, format="png", dpi=90)
    plt.close(figure)


class TrainingCurves(pl.Callback):
    """Keeps ``curves.csv``, ``plots/curves.png`` and the validation video of a run directory (module docstring).

    Args:
        run_dir: the run directory.
        video_fps: frame rate of the validation video.
    """

    def __init__(self, run_dir: str | Path, video_fps: int = 8) -> None:
        self.run = RunDir(Path(run_dir))
        self.video_fps = video_fps
        self._start = time.perf_counter()
        self._offset = 0.0
        self._rows: list[dict[str, float]] = []
        self._frames: list[torch.Tensor] = []
        self._video_failed = False  # after the first failure, no more videos

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        """Lightning hook: read the rows an interrupted run wrote (its clock goes on) and start the clock."""
        self._rows = read_curves(self.run.curves_path)
        self._offset = self._rows[-1]["wall_s"] if self._rows else 0.0  # a resumed run's clock goes on
        self._start = time.perf_counter()

    def on_validation_batch_end(self, trainer, pl_module, outputs: torch.Tensor | None, batch, batch_idx: int,
                                dataloader_idx: int = 0) -> None:
        """Lightning hook: keep the batch's translated frames on the host, for the validation video."""
        if outputs is not None and not trainer.sanity_checking:
            self._frames.append(outputs.detach().float().cpu())

    def on_validation_epoch_end(self, trainer: pl.Trainer, pl_module: TritonSystem) -> None:
        """Lightning hook: record a row of ``val/`` measures, the plot and the video (not after the sanity check)."""
        frames, self._frames = self._frames, []
        if trainer.sanity_checking:
            return
        self._record(trainer, pl_module, frames)

    @rank_zero_only
    def _record(self, trainer: pl.Trainer, pl_module: TritonSystem, frames: list[torch.Tensor]) -> None:
        metrics = trainer.callback_metrics
        if not any(k.startswith("val/") for k in metrics):
            return
        values = {k: float(v) for k, v in metrics.items() if k.startswith("val/") or k in TRAINING_SNAPSHOT}
        batch = int(pl_module.batches_done)
        self._rows = [row for row in self._rows if row["batch"] < batch]  # a resumed run redoes rows
        self._rows.append({"batch": batch, "wall_s": self._offset + time.perf_counter() - self._start,
                           "epoch": trainer.current_epoch, **values})
        write_curves(self.run.curves_path, self._rows)
        plot_curves(self._rows, self.run.curves_plot_path)
        if frames:
            self._write_video(trainer, torch.cat(frames), batch)

    def _write_video(self, trainer: pl.Trainer, frames: torch.Tensor, batch: int) -> None:
        from triton_s2r.inference.video import frame_writer, to_uint8

        if self._video_failed:
            return
        path = self.run.validation_video_path
        try:
            with frame_writer(path, fps=self.video_fps) as write:
                write(to_uint8(frames.permute(0, 2, 3, 1).numpy()))
        except (ImportError, OSError) as exc:  # no ffmpeg, a full disk: a preview is not worth the run
            self._video_failed = True
            rank_zero_warn(f"the validation video {path} was not written ({exc}); training goes on without it")
            return
        logger = trainer.logger
        if logger is not None and hasattr(logger, "log_video"):
            logger.log_video("val/sequence", [str(path)], step=batch)  # pyright: ignore[reportAttributeAccessIssue]  # W&B's
