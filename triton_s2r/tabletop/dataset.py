"""Generate the tabletop benchmark dataset: baked assets, states, UVL frames and paired "real" renders.

Layout (format version 1, documented in data/README.md)::

    DIR/dataset.yaml                  manifest: version, labels, camera, resolution, splits, counts, provenance
    DIR/assets/scene.yaml, meshes/    baked posable meshes with UVs (our scene-file format)
    DIR/<split>/states.npz            per-frame object poses, cameras, joints
    DIR/<split>/uvl/NNNNNN.png        sim frames, reference TRITON UVL format (16-bit PNG or EXR)
    DIR/<split>/real/NNNNNN.png       "real" frames (8-bit RGB), path traced with hidden appearance
    DIR/hidden/albedo/<label>.png     the hidden albedo per label, for eval only (``tabletop/hidden.py``)

Splits: ``train_sim`` (UVL only) and ``train_real`` come from independent states (unpaired; train_real's UVL
frames are there for the paired oracle baseline only);
``test`` and ``sequences/seq_NNN`` hold both, paired. Everything is a function of the seed; every file is
written atomically and skipped if present, so an interrupted run resumes, and ``--shard I/N`` processes
can share one output folder (or separate ones, merged by copying).
"""

from __future__ import annotations

import datetime
import os
import shutil
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
import torch
import trimesh
import trimesh.exchange.obj
import trimesh.visual
import yaml
from tqdm import tqdm

from triton_s2r import __version__
from triton_s2r.data.datasets import BenchmarkDataset
from triton_s2r.render.rasterizer import make_rasterizer
from triton_s2r.render.scene import FrameState, Scene
from triton_s2r.render.uvl import gbuffer_to_uvl, write_uvl
from triton_s2r.tabletop.hidden import HIDDEN_MANIFEST, write_hidden_albedo
from triton_s2r.tabletop.mitsuba_variant import select_variant
from triton_s2r.tabletop.robot import Panda
from triton_s2r.tabletop.scene import build_scene, frame_state, sample_clips, sample_states, sample_trajectory
from triton_s2r.utils.files import atomic_savez, atomic_write, write_image

FORMAT_VERSION = 1
UVL_FORMATS = ("png", "exr")
#: Everything a dataset folder holds that ``make_dataset`` wrote (what ``rebuild=True`` deletes; manifest first).
DATASET_ENTRIES = ("dataset.yaml", "assets", "train_sim", "train_real", "test", "sequences")
# ``build`` arguments added after the first manifests, with the value those manifests were built with.
BUILD_ADDED_LATER = {"camera_azimuth_deg": 0.0}


@dataclass(frozen=True)
class Preset:
    """Sizes of a benchmark dataset."""

    resolution: int
    train_sim: int
    train_real: int
    test: int
    sequences: int
    sequence_frames: int
    spp: int


PRESETS = {
    "tiny": Preset(resolution=64, train_sim=16, train_real=16, test=8, sequences=1, sequence_frames=8, spp=8),
    "small": Preset(resolution=128, train_sim=400, train_real=200, test=48, sequences=2, sequence_frames=24, spp=32),
    "full": Preset(resolution=256, train_sim=2000, train_real=1000, test=200, sequences=4, sequence_frames=64, spp=64),
}


@dataclass(frozen=True)
class Split:
    """One split to write: its frames' states and which kinds of frames it holds.

    Attributes:
        name: the split's folder in the dataset (``train_sim``, ``test``, ``sequences/seq_000``, ...).
        state: object poses and cameras of its N frames.
        joints: (N, J) the robot's joint values per frame.
        sim: whether it holds UVL frames.
        real: whether it holds path-traced "real" frames.
        clip_frames: frames per clip (``train_sim`` drawn in clips), else 1.
    """
    name: str
    state: FrameState
    joints: np.ndarray
    sim: bool
    real: bool
    clip_frames: int = 1


def make_dataset(
    out: str | os.PathLike,
    *,
    preset: str = "tiny",
    seed: int = 0,
    frames: int | None = None,
    resolution: int | None = None,
    shard: tuple[int, int] = (0, 1),
    backend: str = "auto",
    uvl_format: str = "png",
    real: bool = True,
    sim_clip_frames: int = 2,
    camera_azimuth_deg: float = 0.0,
    rebuild: bool = False,
) -> Path:
    """Build (or finish building) a benchmark dataset in ``out``.

    Args:
        out: output folder (created).
        preset: ``tiny``, ``small`` or ``full`` (see ``PRESETS``).
        seed: everything (states, appearance, noise) is a function of it.
        frames: override the number of frames of each training split (test split: an eighth, at least 4).
        resolution: override the image size (square).
        shard: ``(i, n)``: render only frames whose index is i modulo n.
        backend: render backend for the sim frames.
        uvl_format: ``png`` (16-bit) or ``exr`` (float32).
        real: also path trace the real frames (Mitsuba, extra ``scenes``).
        sim_clip_frames: N > 1 (default 2, pairs): train_sim states come in clips of N consecutive frames of
            short trajectories (``sample_clips``), for ℓUC over neighbouring views (``data.sim_clip_frames``,
            the same default); 1: independent states. The frame count must be a multiple of N.
        camera_azimuth_deg: orbit every split's cameras by this angle about the table's vertical axis (0: the
            benchmark's view), e.g. for a second domain seen from elsewhere.
        rebuild: if ``out`` holds a dataset built with other arguments, delete its files (``DATASET_ENTRIES``
            only, never other files in the folder) and build from scratch. Without it such a folder is refused
            before anything is written; a folder built with the same arguments is resumed either way.

    Returns:
        The dataset folder.

    Raises:
        ValueError: bad arguments, or ``out`` holds a dataset built with other arguments (the message names
            each differing argument) and ``rebuild`` is off.
    """
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; choose one of {', '.join(PRESETS)}")
    index, count = shard
    if not 0 <= index < count:
        raise ValueError(f"shard must be I/N with 0 <= I < N, got {index}/{count}")
    if (frames is not None and frames < 1) or (resolution is not None and resolution < 8):
        raise ValueError(f"frames must be >= 1 and resolution >= 8, got frames={frames}, resolution={resolution}")
    p = PRESETS[preset]
    if frames is not None:
        p = Preset(p.resolution, frames, frames, max(frames // 8, 4), p.sequences, p.sequence_frames, p.spp)
    if resolution is not None:
        p = Preset(resolution, p.train_sim, p.train_real, p.test, p.sequences, p.sequence_frames, p.spp)
    if uvl_format not in UVL_FORMATS:
        raise ValueError(f"uvl_format must be one of {UVL_FORMATS}, got {uvl_format!r}")
    if sim_clip_frames < 1:
        raise ValueError(f"sim_clip_frames must be >= 1, got {sim_clip_frames}")
    root = Path(out)
    build = {"preset": preset, "seed": seed, "frames": frames, "resolution": p.resolution, "uvl_format": uvl_format,
             "real": real, "sim_clip_frames": sim_clip_frames, "camera_azimuth_deg": float(camera_azimuth_deg)}
    if rebuild:
        _delete_dataset(root)
    elif (root / "dataset.yaml").is_file():  # resuming: the stored frames must come from the same arguments
        differences = build_differences(BenchmarkDataset.open(root, check_files=False).manifest, build, p)
        if differences:
            raise ValueError(
                f"{root} holds a dataset built with other arguments ({'; '.join(differences)}); its frames would "
                f"mix with the new ones. Build into another --out folder, or pass --rebuild (Python: rebuild=True) "
                f"to delete that dataset ({', '.join(DATASET_ENTRIES)}; other files stay) and build from scratch"
            )
    root.mkdir(parents=True, exist_ok=True)

    panda = Panda.load()
    scene = build_scene(panda)
    splits = _sample_splits(scene, panda, p, seed, sim_clip_frames, build["camera_azimuth_deg"])
    if not real:
        splits = [replace(s, real=False) for s in splits if s.sim]
    _write_assets(scene, root / "assets")
    for split in splits:
        (root / split.name).mkdir(parents=True, exist_ok=True)
        s = split.state
        atomic_savez(root / split.name / "states.npz", object_poses=s.object_poses.numpy(),
                     world_from_camera=s.camera.world_from_camera.numpy(), intrinsics=s.camera.intrinsics.numpy(),
                     joints=split.joints, object_names=np.array([o.name for o in scene.objects]))
    variant = select_variant() if any(split.real for split in splits) else None  # the Mitsuba variant, recorded
    _write_manifest(root, scene, p, build, splits, variant)

    rasterizer = make_rasterizer(backend)
    real_renderer = None
    if any(split.real for split in splits):
        from triton_s2r.tabletop.appearance import make_appearance
        from triton_s2r.tabletop.real import RealRenderer

        appearance = make_appearance(scene, seed=seed)
        write_hidden_albedo(root, scene.labels, appearance)  # for eval's texture recovery only
        # Meshes, their BVHs and BSDFs are made once for all real frames; each frame places the meshes.
        real_renderer = RealRenderer(scene, appearance, spp=p.spp, seed=seed, variant=variant)
    for split_index, split in enumerate(splits):
        todo = [i for i in range(split.state.batch_size) if i % count == index]
        uvl_dir, real_dir = root / split.name / "uvl", root / split.name / "real"
        for folder, wanted in ((uvl_dir, split.sim), (real_dir, split.real)):
            if wanted:
                folder.mkdir(exist_ok=True)
        missing = [i for i in todo if (split.sim and not (uvl_dir / f"{i:06d}.{uvl_format}").exists())
                   or (split.real and not (real_dir / f"{i:06d}.png").exists())]
        with tqdm(total=len(todo), initial=len(todo) - len(missing), desc=split.name, unit="frame") as bar:
            for start in range(0, len(missing), 8):
                chunk = missing[start:start + 8]
                state = split.state.select(chunk)
                if split.sim:
                    uvl = gbuffer_to_uvl(rasterizer.render(scene, state), scene.labels).cpu()
                    for j, i in enumerate(chunk):
                        write_uvl(uvl_dir / f"{i:06d}.{uvl_format}", uvl[j])
                if split.real:
                    assert real_renderer is not None
                    # Frame ids unique across splits, so every frame gets its own lighting and noise.
                    ids = [split_index * 1_000_000 + i for i in chunk]
                    images = real_renderer.render(state, frame_ids=ids)
                    for j, i in enumerate(chunk):
                        write_image(real_dir / f"{i:06d}.png", images[j])
                bar.update(len(chunk))
    return root


def _sample_splits(scene: Scene, panda: Panda, p: Preset, seed: int, sim_clip_frames: int,
                   camera_azimuth_deg: float) -> list[Split]:
    """States of every split, each from its own random stream (so splits are disjoint draws)."""
    streams = [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(3 + p.sequences)]
    limits = panda.joint_limits()
    splits = []
    for name, n, rng, sim, real in (("train_sim", p.train_sim, streams[0], True, False),
                                     # train_real's UVL frames serve only the paired oracle baseline
                                     ("train_real", p.train_real, streams[1], True, True),
                                     ("test", p.test, streams[2], True, True)):
        clip = sim_clip_frames if name == "train_sim" else 1
        sample = (sample_clips(rng, n, clip, p.sequence_frames, limits, camera_azimuth_deg) if clip > 1
                  else sample_states(rng, n, limits, camera_azimuth_deg))
        splits.append(Split(name, frame_state(scene, panda, sample, width=p.resolution, height=p.resolution),
                            sample.joints, sim, real, clip))
    for k in range(p.sequences):
        sample = sample_trajectory(streams[3 + k], p.sequence_frames, limits, camera_azimuth_deg)
        splits.append(Split(f"sequences/seq_{k:03d}",
                            frame_state(scene, panda, sample, width=p.resolution, height=p.resolution),
                            sample.joints, True, True))
    return splits


def _write_assets(scene: Scene, folder: Path) -> None:
    """Bake every object's mesh (object frame, with UVs) and a scene file that loads them."""
    (folder / "meshes").mkdir(parents=True, exist_ok=True)
    entries = []
    for obj in scene.objects:
        path = folder / "meshes" / f"{obj.name}.obj"
        if not path.exists():
            m = obj.mesh
            # Split corners so that each vertex has one UV (what OBJ readers hand back anyway).
            pos, uv = m.v_pos[m.t_pos_idx].reshape(-1, 3), m.v_uv[m.t_uv_idx].reshape(-1, 2)
            faces = torch.arange(pos.shape[0]).reshape(-1, 3)
            mesh = trimesh.Trimesh(pos.numpy(), faces.numpy(), process=False,
                                   visual=trimesh.visual.TextureVisuals(uv=uv.numpy()))
            text = trimesh.exchange.obj.export_obj(mesh, include_normals=False, write_texture=False)
            # Keep the UVs (vt) but drop the reference to a material file we do not write.
            text = "\n".join(line for line in text.splitlines() if not line.startswith(("mtllib", "usemtl")))
            with atomic_write(path) as tmp:
                tmp.write_text(text + "\n")
        entries.append({"name": obj.name, "label": scene.labels.names[obj.label - 1], "mesh": f"meshes/{obj.name}.obj"})
    spec = {
        "labels": [{"name": n, "value": v} for n, v in zip(scene.labels.names, scene.labels.values, strict=True)],
        "void_value": scene.labels.void_value,
        "objects": entries,
    }
    with atomic_write(folder / "scene.yaml") as tmp:
        tmp.write_text(yaml.safe_dump(spec, sort_keys=False))


def _write_manifest(root: Path, scene: Scene, p: Preset, build: dict, splits: list[Split],
                    mitsuba_variant: str | None) -> None:
    manifest = {
        "format_version": FORMAT_VERSION,
        "name": f"triton_s2r tabletop benchmark ({build['preset']})",
        "preset": build["preset"],
        "seed": build["seed"],
        "resolution": [p.resolution, p.resolution],
        "uvl_format": build["uvl_format"],
        # The make_dataset arguments that determine the content (not shard or backend): a rerun must match them.
        "build": build,
        "labels": scene.labels.to_dict(),
        "scene": "assets/scene.yaml",
        "camera": {"convention": "OpenCV (x right, y down, z forward), see docs/rendering.md",
                   "states": "<split>/states.npz"},
        "splits": {s.name: {"frames": s.state.batch_size, "sim": s.sim, "real": s.real,
                            **({"clip_frames": s.clip_frames} if s.clip_frames > 1 else {})} for s in splits},
        "render": {"spp": p.spp, **asdict(p), **({"mitsuba_variant": mitsuba_variant} if mitsuba_variant else {})},
        **({"hidden": HIDDEN_MANIFEST} if any(s.real for s in splits) else {}),
        "provenance": {
            "generator": f"triton_s2r {__version__} (triton-s2r make-dataset)",
            "created": datetime.date.today().isoformat(),
            "robot": "Franka Panda meshes from pybullet_data (zlib licence), UVs by xatlas (MIT)",
            "objects": "procedural primitives (triton_s2r.render.primitives)",
            "real_appearance": "procedurally generated textures and lighting (triton_s2r.tabletop.appearance), "
                               "path traced with Mitsuba 3 (BSD-3-Clause)",
        },
    }
    with atomic_write(root / "dataset.yaml") as tmp:
        tmp.write_text(yaml.safe_dump(manifest, sort_keys=False))


def build_differences(manifest: dict, build: dict, p: Preset) -> list[str]:
    """``"name: stored X, requested Y"`` for each content-determining argument that differs from the manifest's.

    Args:
        manifest: a parsed ``dataset.yaml``.
        build: the requested ``build`` mapping (see ``make_dataset``).
        p: the requested preset after the ``frames`` / ``resolution`` overrides.
    """
    stored = manifest.get("build")
    if isinstance(stored, dict):
        stored = {**BUILD_ADDED_LATER, **stored}  # a manifest older than an argument was built with its default
        return [f"{key}: stored {stored.get(key)!r}, requested {value!r}" for key, value in build.items()
                if stored.get(key) != value]
    # Written before the build mapping: compare what the manifest records of the same arguments.
    splits = manifest.get("splits") or {}
    planned = {"train_sim": p.train_sim, "train_real": p.train_real, "test": p.test,
               **{f"sequences/seq_{k:03d}": p.sequence_frames for k in range(p.sequences)}}
    recorded = {
        "preset": (manifest.get("preset"), build["preset"]),
        "seed": (manifest.get("seed"), build["seed"]),
        "resolution": ((manifest.get("resolution") or [None])[0], build["resolution"]),
        "uvl_format": (manifest.get("uvl_format"), build["uvl_format"]),
        "real": (any(bool(info.get("real")) for info in splits.values()), build["real"]),
        "sim_clip_frames": ((splits.get("train_sim") or {}).get("clip_frames", 1), build["sim_clip_frames"]),
        "camera_azimuth_deg": (BUILD_ADDED_LATER["camera_azimuth_deg"], build["camera_azimuth_deg"]),
        "frames per split": ({name: info.get("frames") for name, info in splits.items()}, planned),
    }
    return [f"{key}: stored {old!r}, requested {new!r}" for key, (old, new) in recorded.items() if old != new]


def _delete_dataset(root: Path) -> None:
    """Delete the dataset in ``root``; nothing happens without a manifest.

    Only ``DATASET_ENTRIES`` go, the manifest last, so an interrupted delete is still recognised as a dataset and
    finished by the next ``rebuild``.
    """
    if not (root / "dataset.yaml").is_file():
        return
    for name in DATASET_ENTRIES[1:]:
        entry = root / name
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        elif entry.exists() or entry.is_symlink():
            entry.unlink()
    (root / DATASET_ENTRIES[0]).unlink()
