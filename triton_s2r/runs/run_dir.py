"""The run directory: everything one training run writes, and everything inference reads back.

Layout::

    RUN/config.yaml                 the resolved training config (data only: see ``triton_s2r.runs.config``)
    RUN/data.yaml                   the training data's label table, frame size and where the scene copy is
    RUN/scene/scene.yaml, meshes/   a copy of the training scene (benchmark data), pose.npz: one frame's
                                    object poses, to assemble the scene for export
    RUN/checkpoints/last.ckpt       the newest epoch, a link to its numbered file (what resume and inference load)
    RUN/checkpoints/best.ckpt       the epoch with the best val/psnr (data with a paired test split)
    RUN/checkpoints/epochNNNN.ckpt  the newest ``checkpoints.keep`` epochs
    RUN/status.yaml                 written when training has run all its epochs
    RUN/train.log                   what training logged
    RUN/csv/, RUN/wandb/            metrics (logger=csv, logger=wandb)
    RUN/previews/                   image grids and texture tiles written during training, and the newest
                                    validation video (val_sequence.mp4)
    RUN/curves.csv, RUN/plots/      the validation measures of every validation, and their plot

A run directory is self-contained: copied to another machine, it translates and exports with no dataset
present. Checkpoints are read with ``torch.load(weights_only=True)`` only, so a run from elsewhere cannot
run code when it is loaded.
"""

from __future__ import annotations

import datetime
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch
import yaml
from omegaconf import DictConfig, OmegaConf
from torch import Tensor

from triton_s2r.render.scene import LabelTable, Scene, load_scene
from triton_s2r.utils.files import atomic_savez, atomic_write

if TYPE_CHECKING:
    from torch.serialization import MAP_LOCATION

CONFIG = "config.yaml"
DATA = "data.yaml"
SCENE_DIR = "scene"
POSE = "pose.npz"
CHECKPOINT_DIR = "checkpoints"
LAST = "last.ckpt"
BEST = "best.ckpt"
STATUS = "status.yaml"
LOG = "train.log"
PREVIEW_DIR = "previews"
CURVES = "curves.csv"
CURVES_PLOT = "plots/curves.png"
VALIDATION_VIDEO = "val_sequence.mp4"
#: File name pattern of the numbered checkpoints (``ModelCheckpoint`` fills in the epoch).
EPOCH_PATTERN = "epoch{epoch:04d}"
MODEL_PREFIX = "model."
EMA_PREFIX = "model_ema."  # the moving average of the translator's weights, when training kept one


class CheckpointError(RuntimeError):
    """A checkpoint cannot be read or does not fit the run's config; the message names it and the fix."""


def load_checkpoint(path: str | os.PathLike, map_location: MAP_LOCATION = "cpu") -> dict:
    """``torch.load`` a checkpoint with ``weights_only=True``: tensors and plain containers, never code.

    Raises:
        CheckpointError: the file is truncated, corrupt or holds objects that would need code to load; the
            message names the file and how to go on.
    """
    path = Path(path)
    try:
        checkpoint = torch.load(path, map_location=map_location, weights_only=True)
    except Exception as exc:  # torch raises RuntimeError, UnpicklingError, EOFError, ... for broken files
        raise CheckpointError(
            f"{path}: not a readable checkpoint ({type(exc).__name__}: {str(exc).split('. ')[0][:200]}); it may "
            f"be truncated (a copy or save that did not finish) or not a triton_s2r checkpoint; nothing was "
            f"changed: use another checkpoint of the run (e.g. resume=<run>/checkpoints/epochNNNN.ckpt, or "
            f"--checkpoint epochNNNN) or delete this file"
        ) from exc
    if not isinstance(checkpoint, dict):
        raise CheckpointError(f"{path}: holds a {type(checkpoint).__name__}, not a Lightning checkpoint")
    return checkpoint


def load_model_weights(path: str | os.PathLike) -> dict[str, Tensor]:
    """The translator's weights in a Lightning checkpoint's ``state_dict``, prefix removed (on the CPU).

    The exponential moving average (``model_ema.*``, written with ``system.ema_decay``) when the checkpoint
    has one, else the trained weights (``model.*``).
    """
    state = load_checkpoint(path).get("state_dict") or {}
    prefix = EMA_PREFIX if any(k.startswith(EMA_PREFIX) for k in state) else MODEL_PREFIX
    weights = {k[len(prefix):]: v for k, v in state.items() if k.startswith(prefix)}
    if not weights:
        raise CheckpointError(f"{path}: holds no '{MODEL_PREFIX}*' weights; is it a `triton-s2r train` checkpoint?")
    return weights


@dataclass(frozen=True)
class RunDir:
    """One training run's folder (layout in the module docstring).

    Args:
        path: the folder (``hydra.run.dir`` of ``triton-s2r train``); it need not exist yet.
    """

    path: Path

    def __post_init__(self) -> None:
        object.__setattr__(self, "path", Path(self.path))

    @classmethod
    def open(cls, path: str | os.PathLike) -> RunDir:
        """An existing run directory (one with ``config.yaml``).

        Raises:
            FileNotFoundError: no such folder, or no run in it; the message says what to pass.
        """
        run = cls(Path(path))
        if not run.path.is_dir():
            raise FileNotFoundError(f"run directory not found: {run.path}; pass the folder that `triton-s2r train` "
                                    f"wrote (its hydra.run.dir, e.g. outputs/runs/demo)")
        if not run.config_path.is_file():
            raise FileNotFoundError(f"{run.config_path} not found: {run.path} is not a triton_s2r run directory "
                                    f"(train writes config.yaml there when it starts); pass the run's folder")
        return run

    # ---------------------------------------------------------------------------------------------- paths

    @property
    def config_path(self) -> Path:
        """``config.yaml``: the resolved training config."""
        return self.path / CONFIG

    @property
    def checkpoint_dir(self) -> Path:
        """``checkpoints/``: ``last.ckpt``, ``best.ckpt`` and the numbered epochs."""
        return self.path / CHECKPOINT_DIR

    @property
    def last(self) -> Path:
        """The newest epoch's checkpoint: ``checkpoints/last.ckpt`` (it may not exist yet).

        Training keeps ``last.ckpt`` as a link to the newest numbered epoch, replaced at each epoch's end; if a job
        was killed between removing the old link and making the new one, this is that epoch's file itself.
        """
        last = self.checkpoint_dir / LAST
        if last.is_file():
            return last
        epochs = sorted(self.checkpoint_dir.glob("epoch[0-9]*.ckpt")) if self.checkpoint_dir.is_dir() else []
        return epochs[-1] if epochs else last

    @property
    def log_path(self) -> Path:
        """``train.log``: the training log."""
        return self.path / LOG

    @property
    def preview_dir(self) -> Path:
        """``previews/``: preview grids, baked textures and the validation video."""
        return self.path / PREVIEW_DIR

    @property
    def scene_dir(self) -> Path:
        """``scene/``: a copy of the training scene and one frame's object poses (``save_training_data``)."""
        return self.path / SCENE_DIR

    @property
    def curves_path(self) -> Path:
        """``curves.csv``: a row of validation measures per validation (``triton_s2r.training.curves``)."""
        return self.path / CURVES

    @property
    def curves_plot_path(self) -> Path:
        """``plots/curves.png``: ``curves.csv`` plotted."""
        return self.path / CURVES_PLOT

    @property
    def validation_video_path(self) -> Path:
        """The newest translation of the validation sequence."""
        return self.preview_dir / VALIDATION_VIDEO

    # ---------------------------------------------------------------------------------------------- config

    def config(self) -> DictConfig:
        """The run's resolved training config, read as data (YAML, no object tags)."""
        from triton_s2r.runs.config import load_config

        return load_config(self.config_path)

    def write_config(self, cfg: DictConfig) -> None:
        """Write ``cfg``, resolved, as the run's ``config.yaml`` (atomically)."""
        self.path.mkdir(parents=True, exist_ok=True)
        with atomic_write(self.config_path) as tmp:
            tmp.write_text(OmegaConf.to_yaml(cfg, resolve=True))

    # ---------------------------------------------------------------------------------------------- checkpoints

    def checkpoint(self, name: str | os.PathLike | None = None) -> Path:
        """A checkpoint file of the run.

        Args:
            name: None for ``last.ckpt``; a file path; or a name in ``checkpoints/`` (``best``,
                ``epoch0003.ckpt``, or ``epoch0003`` without the suffix).

        Raises:
            FileNotFoundError: no such checkpoint; the message lists the ones the run has.
        """
        if name is None:
            path = self.last
        else:
            path = Path(name)
            if not path.is_file() and len(path.parts) == 1:
                path = self.checkpoint_dir / (path.name if path.suffix == ".ckpt" else f"{path.name}.ckpt")
        if not path.is_file():
            available = self.checkpoints()
            hint = (f"the run has {', '.join(p.name for p in available)}; pass one of them" if available else
                    "the run has no checkpoints yet: train it (`triton-s2r train ... hydra.run.dir=<run dir>`) "
                    "until an epoch ends")
            raise FileNotFoundError(f"checkpoint not found: {path}; {hint}")
        return path

    def checkpoints(self) -> list[Path]:
        """Every checkpoint file of the run, by name."""
        return sorted(self.checkpoint_dir.glob("[!.]*.ckpt")) if self.checkpoint_dir.is_dir() else []

    def remove_partial_files(self) -> list[Path]:
        """Delete the temporary files that a kill during a save left behind, and return them.

        These are ``atomic_write``'s hidden ``.name.*`` files.
        """
        partial = [*self.checkpoint_dir.glob(".*.ckpt"), *self.path.glob(".*.yaml"), *self.path.glob(".*.npz"),
                   *self.scene_dir.glob("**/.*.*")]
        for path in partial:
            path.unlink(missing_ok=True)
        return partial

    # ---------------------------------------------------------------------------------------------- status

    def epochs_done(self) -> int:
        """Epochs of a training that ran to its end (0 while none did: interrupted or still running)."""
        return int(self.status().get("epochs", 0))

    def training_done(self, max_epochs: int) -> bool:
        """Whether a training with ``max_epochs`` has nothing left to do here.

        It ran its epochs, or it ran to the end of its time budget (``trainer.max_time``), which a rerun would not
        extend.
        """
        status = self.status()
        return int(status.get("epochs", 0)) >= max_epochs or status.get("stopped_by") == "max_time"

    def mark_finished(self, epochs: int, batches: int, stopped_by: str = "max_epochs",
                      peak_gpu_memory_gib: float | None = None) -> None:
        """Record that training ran to its end: ``epochs`` epochs (``batches`` batches).

        ``stopped_by``: ``"max_epochs"``, or ``"max_time"`` when its time budget ended it. ``peak_gpu_memory_gib``:
        the most GPU memory the training process reserved (torch's allocator, GiB), None on the CPU.
        """
        if stopped_by not in ("max_epochs", "max_time"):
            raise ValueError(f"stopped_by must be 'max_epochs' or 'max_time', got {stopped_by!r}")
        status = {"finished": True, "epochs": epochs, "batches": batches, "stopped_by": stopped_by,
                  "time": datetime.datetime.now().isoformat(timespec="seconds")}
        if peak_gpu_memory_gib is not None:
            status["peak_gpu_memory_gib"] = round(peak_gpu_memory_gib, 2)
        with atomic_write(self.path / STATUS) as tmp:
            tmp.write_text(yaml.safe_dump(status, sort_keys=False))

    def status(self) -> dict:
        """``status.yaml``: ``finished``, ``epochs``, ``batches``, ``stopped_by``, ``time``; {} until training ended.

        On a GPU also ``peak_gpu_memory_gib``.
        """
        path = self.path / STATUS
        return (yaml.safe_load(path.read_text()) or {}) if path.is_file() else {}

    # ---------------------------------------------------------------------------------------------- data

    def save_training_data(self, labels: LabelTable, resolution: tuple[int, int] | None = None,
                           scene_file: Path | None = None, pose: Tensor | None = None) -> None:
        """Keep what inference needs of the training data: labels, frame size and a copy of the scene.

        Args:
            labels: the training data's label table.
            resolution: (H, W) of the training frames, the size of states rendered for this run by default.
            scene_file: the scene file the sim frames were rendered from; it and its meshes are copied
                (hard-linked where the file system allows) to ``RUN/scene``. None for plain UVL folders.
            pose: (N, 4, 4) world-from-object poses of one frame, to assemble the scene for export.
        """
        if scene_file is not None:
            copy_scene(scene_file, self.scene_dir)
            if pose is not None:
                atomic_savez(self.scene_dir / POSE, object_poses=pose.numpy())
        data = {"labels": labels.to_dict(), "resolution": list(resolution) if resolution else None,
                "scene": f"{SCENE_DIR}/scene.yaml" if scene_file is not None else None}
        with atomic_write(self.path / DATA) as tmp:
            tmp.write_text(yaml.safe_dump(data, sort_keys=False))

    def _data(self) -> dict:
        path = self.path / DATA
        return (yaml.safe_load(path.read_text()) or {}) if path.is_file() else {}

    def labels(self) -> LabelTable | None:
        """The training data's label table; None for a run that recorded none (older than ``data.yaml``)."""
        spec = self._data().get("labels")
        if spec is None:  # plain user folders give the table in the config itself
            spec = (self.config().get("data") or {}).get("labels")
            return LabelTable.from_dict(spec) if spec and spec.get("names") is not None else None
        return LabelTable.from_dict(spec)

    def resolution(self) -> tuple[int, int] | None:
        """(H, W) of the training frames, when recorded."""
        size = self._data().get("resolution")
        return (int(size[0]), int(size[1])) if size else None

    def keeps_scene(self) -> bool:
        """Whether the run kept a copy of its training scene (benchmark data does; plain folders do not)."""
        return bool(self._data().get("scene"))

    def scene(self) -> Scene:
        """The copy of the training scene.

        Raises:
            FileNotFoundError: the run was trained on plain UVL folders (no scene); pass one.
        """
        name = self._data().get("scene")
        if not name:
            raise FileNotFoundError(f"run {self.path} keeps no scene (it was trained on UVL frames, not on a "
                                    f"benchmark dataset); pass the scene file (--scene <scene.yaml>)")
        return load_scene(self.path / name)

    def scene_pose(self) -> Tensor | None:
        """(N, 4, 4) object poses of one training frame, to assemble the scene; None when not kept."""
        path = self.scene_dir / POSE
        if not path.is_file():
            return None
        with np.load(path) as data:
            return torch.from_numpy(data["object_poses"])



def copy_scene(scene_file: str | os.PathLike, folder: str | os.PathLike) -> Path:
    """Copy a scene file and the meshes it names into ``folder`` (``scene.yaml``, ``meshes/``).

    Mesh files are hard-linked when the file system allows (no extra disk), else copied; the copy's scene
    file names them by their new relative paths, everything else as in the original. Returns the copy.
    """
    scene_file, folder = Path(scene_file), Path(folder)
    spec = yaml.safe_load(scene_file.read_text())
    (folder / "meshes").mkdir(parents=True, exist_ok=True)
    copied: dict[Path, str] = {}
    for entry in spec["objects"]:
        source = (scene_file.parent / entry["mesh"]).resolve()
        if source not in copied:
            name = f"meshes/{source.name}" if source.name not in {Path(n).name for n in copied.values()} \
                else f"meshes/{len(copied)}_{source.name}"
            target = folder / name
            target.unlink(missing_ok=True)
            try:
                os.link(source, target)
            except OSError:
                shutil.copy2(source, target)
            copied[source] = name
        entry["mesh"] = copied[source]
    with atomic_write(folder / "scene.yaml") as tmp:
        tmp.write_text(yaml.safe_dump(spec, sort_keys=False))
    return folder / "scene.yaml"
