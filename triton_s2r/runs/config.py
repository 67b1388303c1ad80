"""The training config as data: checks before anything runs, differences between runs, safe model building.

A run's ``config.yaml`` may come from elsewhere (a shared run directory), so reading it must not run code:
``load_config`` reads plain YAML, and ``build_model`` instantiates only the ``triton_s2r`` model classes
that the shipped configs name (``MODEL_CLASSES``); any other ``_target_`` is refused before anything is
built. Runs saved before a class moved name it by its old path, and runs saved before a key was retired hold
it: ``load_config`` reads those through ``MOVED_TARGETS`` and ``RETIRED_KEYS``, so an old run compares equal
to, and continues like, one saved today.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from pathlib import Path

import yaml
from omegaconf import DictConfig, OmegaConf, open_dict
from torch import nn

#: The only ``_target_`` values a model section may name.
MODEL_CLASSES = frozenset({
    "triton_s2r.models.triton.TritonModel",
    "triton_s2r.models.sim_input.SimInput",
    "triton_s2r.models.generator.StyleFreeGenerator",
    "triton_s2r.models.neural_texture.NeuralTexture",
    "triton_s2r.models.raster_texture.RasterTexture",
    "triton_s2r.models.discriminator.MultiScaleDiscriminator",
})
#: ``_target_`` values of saved configs whose classes have moved since (the package's sub-packages): old -> new.
#: ``load_config`` rewrites them, so every reader of a run's config sees today's paths.
MOVED_TARGETS = {
    "triton_s2r.system.TritonSystem": "triton_s2r.training.system.TritonSystem",
    "triton_s2r.paired.PairedSystem": "triton_s2r.training.paired.PairedSystem",
    "triton_s2r.datamodule.TritonDataModule": "triton_s2r.data.datamodule.TritonDataModule",
}
#: Keys of saved configs that today's configs no longer hold: old key -> the key whose value it always took.
#: ``load_config`` drops such a key where its value equals that key's, so the run compares equal to one saved
#: today; where they differ it stays, and ``config_diff`` names it (this code cannot train that setting).
RETIRED_KEYS = {
    "system.surface_consistency_clip_frames": "data.sim_clip_frames",  # ℓUC's clips are the data's clips
}
#: Hydra's own keys that a model section may hold besides ``_target_`` and constructor arguments.
_ALLOWED_HYDRA_KEYS = frozenset({"_target_", "_convert_", "_recursive_"})

#: Keys that do not change what a run trains: a rerun may differ in them (``config_diff`` skips them).
NOT_COMPARED = ("resume", "num_labels", "checkpoints", "logger", "trainer.default_root_dir",
                "trainer.enable_progress_bar", "data.num_workers")
#: Keys holding paths: the same folder by another name (relative, through a link) is no difference.
PATH_KEYS = ("data.root", "data.sim_dir", "data.real_dir")


class ConfigError(ValueError):
    """A config value that cannot work; the message names the key and what it must be."""


def load_config(path: str | os.PathLike) -> DictConfig:
    """Read a run's ``config.yaml`` as plain data, updated to today's class paths and keys.

    Read with ``yaml.safe_load`` (no object tags, no code); the ``_target_`` paths of classes that have moved since
    it was saved are updated (``MOVED_TARGETS``) and the keys retired since then dropped (``RETIRED_KEYS``).

    Raises:
        ConfigError: not a YAML mapping; the message names the file.
    """
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML ({exc}); restore the run's config.yaml") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of config keys, got {type(data).__name__}")
    return OmegaConf.create(_retired(_moved(data)))


def _retired(data: dict) -> dict:
    """``data`` without the ``RETIRED_KEYS`` that hold the value of the key they were retired for."""
    def parent_and_name(key: str) -> tuple[dict | None, str]:
        *path, name = key.split(".")
        node = data
        for part in path:
            node = node.get(part) if isinstance(node, dict) else None
        return (node if isinstance(node, dict) else None), name

    for old, new in RETIRED_KEYS.items():
        (node, name), (source, source_name) = parent_and_name(old), parent_and_name(new)
        if node is not None and source is not None and name in node and node[name] == source.get(source_name):
            del node[name]
    return data


def _moved(node):
    """``node`` (plain nested containers) with every ``_target_`` named in ``MOVED_TARGETS`` updated."""
    if isinstance(node, dict):
        return {key: MOVED_TARGETS.get(value, value) if key == "_target_" and isinstance(value, str) else _moved(value)
                for key, value in node.items()}
    if isinstance(node, list):
        return [_moved(value) for value in node]
    return node


def _targets(node, where: str) -> Iterator[tuple[str, object]]:
    """(key path, value) of every ``_target_`` and other Hydra key in a plain nested container."""
    if isinstance(node, dict):
        for key, value in node.items():
            path = f"{where}.{key}"
            if isinstance(key, str) and key.startswith("_") and key.endswith("_"):
                yield path, value
            else:
                yield from _targets(value, path)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _targets(value, f"{where}[{i}]")


def build_model(node: DictConfig, where: str = "model.translator", source: str | os.PathLike = "config") -> nn.Module:
    """Instantiate a model section that names only ``MODEL_CLASSES``.

    Args:
        node: the section (e.g. ``cfg.model.translator``); interpolations are resolved first, so none can
            smuggle in a target.
        where: its key path, for messages.
        source: the file it came from, for messages.

    Raises:
        ConfigError: a ``_target_`` outside ``MODEL_CLASSES`` or another Hydra key (``_partial_``, ``_args_``,
            ...); nothing is imported or called then.
    """
    from hydra.utils import instantiate

    plain = OmegaConf.to_container(node, resolve=True)
    for key, value in _targets(plain, where):
        name = key.rsplit(".", 1)[-1]
        if name not in _ALLOWED_HYDRA_KEYS or (name == "_target_" and value not in MODEL_CLASSES):
            raise ConfigError(f"{source}: {key}: {value!r} is not allowed in a model section (allowed targets: "
                              f"{', '.join(sorted(MODEL_CLASSES))}); a run directory is data and names only "
                              f"triton_s2r model classes: restore its config.yaml from the run that wrote it")
    return instantiate(plain)


def _flat(node, prefix: str = "") -> dict[str, object]:
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            out.update(_flat(value, f"{prefix}{key}."))
        return out or {prefix[:-1]: {}}
    return {prefix[:-1]: node}


def config_diff(saved: DictConfig, new: DictConfig) -> list[str]:
    """The keys whose values differ between two resolved training configs, as ``key: saved -> new`` lines.

    Keys under ``NOT_COMPARED`` (where to log, how many loader processes, ...) are skipped; ``PATH_KEYS``
    are compared as resolved paths.
    """
    new = new.copy()
    if OmegaConf.is_missing(new, "num_labels"):  # filled in from the data later; other keys interpolate it
        with open_dict(new):
            new.num_labels = saved.get("num_labels")
    a = _flat(OmegaConf.to_container(saved, resolve=True, throw_on_missing=False))
    b = _flat(OmegaConf.to_container(new, resolve=True, throw_on_missing=False))
    for flat in (a, b):
        for key in PATH_KEYS:
            value = flat.get(key)
            if isinstance(value, str):
                flat[key] = str(Path(value).resolve())
    lines = []
    for key in sorted(a.keys() | b.keys()):
        if any(key == skip or key.startswith(f"{skip}.") for skip in NOT_COMPARED):
            continue
        if a.get(key, "<absent>") != b.get(key, "<absent>"):
            lines.append(f"{key}: {a.get(key, '<absent>')} -> {b.get(key, '<absent>')}")
    return lines


#: Experiments that set the scale (networks, texture, data, trainer); in a list of experiments they come first, since
#: a later experiment's choices win (``[raster_texture,tiny]`` would train tiny's neural texture).
SCALE_EXPERIMENTS = ("tiny", "demo", "paper")


def check_experiment_order(experiments: list[str]) -> None:
    """Refuse a list of experiments whose scale (``SCALE_EXPERIMENTS``) is not the first.

    Raises:
        ConfigError: naming the list and the order that works.
    """
    late = [name for name in experiments[1:] if name in SCALE_EXPERIMENTS]
    if late:
        given = ",".join(experiments)
        order = ",".join([late[0]] + [name for name in experiments if name != late[0]])
        raise ConfigError(
            f"experiment=[{given}]: the scale ({late[0]}) must come first, since a later experiment's choices win "
            f"(here {late[0]} would undo the others' texture or networks); write experiment=[{order}]"
        )


#: (key, smallest allowed value, integer only) of the training config's numbers.
_BOUNDS = (
    ("data.batch_size", 1, True), ("data.steps_per_epoch", 1, True), ("data.num_workers", 0, True),
    ("data.sim_clip_frames", 1, True), ("data.val_frames", 0, True), ("data.val_sequence_frames", 0, True),
    ("data.val_train_frames", 0, True),
    ("trainer.max_epochs", 1, True),
    ("system.crop_size", 8, True), ("system.supersample", 1, True), ("system.preview_every_n_batches", 1, True),
    ("system.max_nonfinite_steps", 1, True), ("checkpoints.keep", 1, True), ("system.lr", 0, False),
    ("system.gradient_clip_ratio", 1, False),
)


def check_training_config(cfg: DictConfig) -> None:
    """Refuse config values that cannot work before any data is built or any file is written.

    Raises:
        ConfigError: naming the first bad key, its value and what it must be.
    """
    for key, low, integer in _BOUNDS:
        value = OmegaConf.select(cfg, key, default=None, throw_on_missing=False)
        if value is None or value == "???":
            continue
        bad_type = isinstance(value, bool) or not isinstance(value, (int, float)) or (integer and value != int(value))
        if bad_type or not math.isfinite(value) or value < low or (not integer and value == low):
            need = f"an integer >= {low}" if integer else f"a number > {low}"
            raise ConfigError(f"{key}={value!r} cannot work: it must be {need}; fix the override or the experiment")
