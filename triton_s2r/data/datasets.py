"""Reading datasets: benchmark folders (``dataset.yaml``) and plain user folders of UVL frames and photos.

Every loader validates what it reads and fails with a message naming the file and the fix: missing or
corrupt files, images of the wrong size, label values missing from the label table. UVs slightly
outside [0, 1] (the reference Blender data has them) are clamped and counted, with one warning per folder.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np
import torch
import yaml
from torch import Tensor
from torch.utils.data import Dataset

from triton_s2r.render.camera import Camera
from triton_s2r.render.gbuffer import GBuffer
from triton_s2r.render.scene import FrameState, LabelTable
from triton_s2r.render.uvl import UVL_SUFFIXES, load_uvl_gbuffer

SUPPORTED_FORMAT_VERSIONS = (1,)
#: Keys every version-1 manifest has (data/README.md); ``build`` is newer and optional.
MANIFEST_KEYS = ("labels", "resolution", "uvl_format", "splits")
PHOTO_SUFFIXES = (".png", ".jpg", ".jpeg")


class DatasetError(ValueError):
    """A dataset folder is incomplete or inconsistent; the message names the file and the fix."""


def _listing(folder: Path, suffixes: tuple[str, ...], what: str) -> list[Path]:
    if not folder.is_dir():
        raise DatasetError(f"{folder}: {what} folder not found")
    files = sorted(p for p in folder.iterdir() if p.suffix.lower() in suffixes and not p.name.startswith("."))
    if not files:
        raise DatasetError(f"{folder}: no {what} files ({', '.join(suffixes)}) in this folder")
    return files


class UVLFrames(Dataset):
    """A folder of UVL frames (reference TRITON format, ``.exr`` or 16-bit ``.png``), in file-name order.

    Items are one-frame G-buffers: ``uv`` (1, 2, H, W) in [0, 1] and ``label`` (1, H, W).

    Args:
        folder: the folder.
        labels: label table mapping the files' label values to ids.
        size: expected (H, W); a frame of another size is an error. None: the first frame's size.
    """

    def __init__(self, folder: str | os.PathLike, labels: LabelTable, size: tuple[int, int] | None = None) -> None:
        self.folder = Path(folder)
        self.labels = labels
        self.files = _listing(self.folder, UVL_SUFFIXES, "UVL frame")
        self.size = size
        self.clamped_pixels = 0  # UV values outside [0, 1] seen so far (clamped)
        self._warned = False

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, index: int) -> GBuffer:
        path = self.files[index]
        gbuffer = load_uvl_gbuffer(path, self.labels)
        size = (gbuffer.height, gbuffer.width)
        if self.size is None:
            self.size = size
        elif size != tuple(self.size):
            raise DatasetError(f"{path}: frame is {size[0]}x{size[1]} (HxW) but {self.folder} holds "
                               f"{self.size[0]}x{self.size[1]} frames; re-render or resize it (nearest only)")
        outside = int(((gbuffer.uv < 0) | (gbuffer.uv > 1)).sum())
        if outside:
            self.clamped_pixels += outside
            if not self._warned:
                warnings.warn(f"{path}: {outside} UV values outside [0, 1] were clamped (counted in "
                              f"UVLFrames.clamped_pixels); check your exporter", stacklevel=2)
                self._warned = True
            gbuffer = GBuffer(uv=gbuffer.uv.clamp(0, 1), label=gbuffer.label)
        return gbuffer


class Photos(Dataset):
    """A folder of RGB photos (PNG or JPEG), in file-name order; items are (3, H, W) float32 in [0, 1].

    All photos must have one size, checked at construction from the image headers only (no decoding).

    Args:
        folder: the folder.
        min_short_side: warn if the photos' shorter side is below this (e.g. the training crop, which would
            upsample them); None: no check.
        max_short_side: decode larger photos reduced, to exactly this shorter side (see ``read_photo``);
            None: full size.
    """

    def __init__(self, folder: str | os.PathLike, *, min_short_side: int | None = None,
                 max_short_side: int | None = None) -> None:
        self.folder = Path(folder)
        self.files = _listing(self.folder, PHOTO_SUFFIXES, "photo")
        self.max_short_side = _check_side("max_short_side", max_short_side)
        self.size = _one_size(self.folder, self.files)  # (H, W) as stored
        short = min(self.size)
        min_short_side = _check_side("min_short_side", min_short_side)
        if min_short_side is not None and short < min_short_side:
            warnings.warn(f"{self.folder}: photos are {self.size[0]}x{self.size[1]} (HxW), shorter side {short} < "
                          f"{min_short_side} needed for training; they will be upsampled (blurred): use larger "
                          "photos or a smaller crop", stacklevel=2)

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, index: int) -> Tensor:
        return read_photo(self.files[index], max_short_side=self.max_short_side)


def _check_side(name: str, value: int | None) -> int | None:
    if value is not None and (not isinstance(value, int) or value < 1):
        raise ValueError(f"{name} must be a positive integer or None, got {value!r}")
    return value


def _header_size(path: Path) -> tuple[int, int]:
    """(H, W) of an image from its header (PIL opens lazily: no pixel is decoded)."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as img:
            width, height = img.size
    except (UnidentifiedImageError, OSError, SyntaxError) as exc:
        raise DatasetError(f"{path}: not a readable image ({exc}); re-export or delete it") from exc
    return height, width


def _one_size(folder: Path, files: list[Path]) -> tuple[int, int]:
    """The (H, W) shared by every photo of ``folder``; a folder of several sizes is an error naming examples."""
    examples: dict[tuple[int, int], list[Path]] = {}
    for path in files:
        examples.setdefault(_header_size(path), []).append(path)
    if len(examples) > 1:
        listed = "; ".join(f"{h}x{w}: {len(paths)} file(s), e.g. {paths[0].name}"
                           for (h, w), paths in sorted(examples.items(), key=lambda kv: -len(kv[1])))
        raise DatasetError(f"{folder}: photos of {len(examples)} different sizes (HxW) in one folder ({listed}); "
                           "resize all photos to one size (e.g. to the most common one) or split the folder")
    return next(iter(examples))


def read_photo(path: str | os.PathLike, *, max_short_side: int | None = None) -> Tensor:
    """Read an 8- or 16-bit RGB image as a (3, H, W) float32 tensor in [0, 1]; errors name the file.

    Args:
        path: PNG or JPEG file.
        max_short_side: if the shorter side is longer, decode the image reduced (OpenCV's
            ``IMREAD_REDUCED_COLOR_2/4/8``, picked from the header so the decoded shorter side stays >= this;
            8-bit result) and resize it with area averaging to exactly this shorter side, keeping the aspect
            ratio. Decoding an 8192x8192 photo at full size takes 200 MB and seconds; this takes a fraction.
            None: full size.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"photo not found: {path}")
    flag, target = cv2.IMREAD_UNCHANGED, None
    max_short_side = _check_side("max_short_side", max_short_side)
    if max_short_side is not None:
        height, width = _header_size(path)
        if min(height, width) > max_short_side:
            target = _resized(height, width, max_short_side)
            factor = next(f for f in (8, 4, 2, 1) if min(height, width) // f >= max_short_side)
            # IMREAD_UNCHANGED ignores EXIF orientation; the reduced decode must too, or the size would differ.
            flag = REDUCED_COLOR[factor] | cv2.IMREAD_IGNORE_ORIENTATION if factor > 1 else cv2.IMREAD_UNCHANGED
    img = cv2.imread(str(path), flag)
    if img is None:
        raise DatasetError(f"{path}: not a readable image; re-export or delete it")
    if img.ndim == 2:
        img = np.repeat(img[..., None], 3, axis=2)
    if target is not None and img.shape[:2] != target:
        img = cv2.resize(img, (target[1], target[0]), interpolation=cv2.INTER_AREA)
    scale = 65535.0 if img.dtype == np.uint16 else 255.0
    rgb = img[..., 2::-1].astype(np.float32) / scale  # BGR(A) -> RGB
    return torch.from_numpy(np.ascontiguousarray(rgb.transpose(2, 0, 1)))


#: OpenCV flags that decode at 1/2, 1/4 or 1/8 of the size (JPEG: in the DCT, cheaply), as 8-bit BGR.
REDUCED_COLOR = {2: cv2.IMREAD_REDUCED_COLOR_2, 4: cv2.IMREAD_REDUCED_COLOR_4, 8: cv2.IMREAD_REDUCED_COLOR_8}


def _resized(height: int, width: int, short: int) -> tuple[int, int]:
    """(H, W) with the shorter side ``short`` and the aspect ratio kept (longer side rounded)."""
    if height <= width:
        return short, max(short, round(width * short / height))
    return max(short, round(height * short / width)), short


def load_states(path: str | os.PathLike, width: int, height: int) -> FrameState:
    """Read a ``states.npz`` written by ``triton-s2r make-dataset`` (poses, cameras) as a FrameState."""
    path = Path(path)
    if not path.is_file():
        raise DatasetError(f"{path}: states file not found; rerun `triton-s2r make-dataset` on this folder")
    with np.load(path) as data:
        pose, intrinsics = torch.from_numpy(data["world_from_camera"]), torch.from_numpy(data["intrinsics"])
        camera = Camera(pose, intrinsics, width, height)
        return FrameState(torch.from_numpy(data["object_poses"]), camera)


def read_manifest(path: Path) -> dict:
    """Parse ``dataset.yaml`` and check it is a mapping of a supported ``format_version``, before any other key.

    The version comes first: a manifest of a newer format may lack keys of this one, and "missing key" would
    hide the real problem.
    """
    try:
        manifest = yaml.safe_load(path.read_text())
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise DatasetError(f"{path}: not a readable YAML file ({exc}); rebuild the dataset or restore the "
                           "manifest") from exc
    if not isinstance(manifest, dict):
        raise DatasetError(f"{path}: a manifest must be a YAML mapping (format_version, labels, splits, ...), got "
                           f"{type(manifest).__name__}; rebuild the dataset or restore the manifest")
    if "format_version" not in manifest:
        raise DatasetError(f"{path}: no format_version; not a triton_s2r manifest, or a damaged one: rebuild the "
                           "dataset or restore the manifest")
    version = manifest["format_version"]
    if isinstance(version, bool) or version not in SUPPORTED_FORMAT_VERSIONS:
        raise DatasetError(f"{path}: format version {version!r} is not supported by this triton_s2r "
                           f"(supports {SUPPORTED_FORMAT_VERSIONS}); upgrade triton_s2r or rebuild the dataset")
    return manifest


@dataclass(frozen=True)
class BenchmarkDataset:
    """A dataset folder described by ``dataset.yaml`` (format in data/README.md)."""

    root: Path
    manifest: dict
    labels: LabelTable

    @classmethod
    def open(cls, root: str | os.PathLike, *, check_files: bool = True) -> BenchmarkDataset:
        """Read and check the manifest; with ``check_files``, also that every listed frame exists."""
        root = Path(root)
        path = root / "dataset.yaml"
        if not path.is_file():
            raise DatasetError(f"{path} not found: not a triton_s2r dataset; build one with "
                               f"`triton-s2r make-dataset --out {root}`")
        manifest = read_manifest(path)
        fix = f"rebuild the dataset (`triton-s2r make-dataset --out {root} --rebuild` with its arguments)"
        missing = [key for key in MANIFEST_KEYS if key not in manifest]
        if missing:
            raise DatasetError(f"{path}: not a valid version-1 manifest: missing {', '.join(missing)}; {fix}")
        try:
            labels = LabelTable(tuple(manifest["labels"]["names"]), tuple(manifest["labels"]["values"]),
                                manifest["labels"]["void_value"])
            splits = manifest["splits"]
            if not isinstance(splits, dict) or not all(isinstance(v, dict) for v in splits.values()):
                raise TypeError(f"splits must map split names to mappings, got {splits!r}")
        except (KeyError, TypeError, ValueError) as exc:
            raise DatasetError(f"{path}: not a valid version-1 manifest ({type(exc).__name__}: {exc}); {fix}") from exc
        dataset = cls(root, manifest, labels)
        if check_files:
            dataset.check_files()
        return dataset

    @property
    def resolution(self) -> tuple[int, int]:
        """(H, W) of every frame."""
        h, w = self.manifest["resolution"]
        return int(h), int(w)

    @property
    def splits(self) -> dict[str, dict]:
        """Split name -> its manifest entry (``frames``, ``sim``, ``real`` and, for clips, ``clip_frames``)."""
        return self.manifest["splits"]

    def is_paired(self, split: str) -> bool:
        """Whether ``split`` exists and holds both UVL frames and real photos of the same states."""
        info = self.splits.get(split, {})
        return bool(info.get("sim") and info.get("real"))

    def frame_paths(self, split: str, kind: str) -> list[Path]:
        """Expected files of ``split``; ``kind`` is ``"uvl"`` or ``"real"``."""
        info = self.splits[split]
        suffix = self.manifest["uvl_format"] if kind == "uvl" else "png"
        return [self.root / split / kind / f"{i:06d}.{suffix}" for i in range(info["frames"])]

    def check_files(self) -> None:
        """Raise if any frame listed by the manifest is missing (an interrupted build, or a lost shard)."""
        for split, info in self.splits.items():
            for kind in [k for k in ("uvl", "real") if info[k if k == "real" else "sim"]]:
                missing = [p for p in self.frame_paths(split, kind) if not p.is_file()]
                if missing:
                    raise DatasetError(
                        f"{self.root}: {len(missing)} {kind} frames of split {split!r} are missing (first: "
                        f"{missing[0]}); rerun `triton-s2r make-dataset` with the same arguments to finish it"
                    )

    @property
    def scene_file(self) -> Path:
        """The scene file of the baked meshes and labels (``assets/scene.yaml`` in a built benchmark)."""
        if "scene" not in self.manifest:
            raise DatasetError(f"{self.root / 'dataset.yaml'} names no scene file (key `scene`); rebuild the dataset "
                               f"(`triton-s2r make-dataset --out {self.root} --rebuild` with its arguments)")
        return self.root / self.manifest["scene"]

    def uvl_frames(self, split: str) -> UVLFrames:
        """The UVL frames of ``split``, at the dataset's resolution."""
        return UVLFrames(self.root / split / "uvl", self.labels, size=self.resolution)

    def photos(self, split: str) -> Photos:
        """The real photos of ``split``."""
        return Photos(self.root / split / "real")

    def states(self, split: str) -> FrameState:
        """Object poses and cameras of every frame of ``split`` (its ``states.npz``)."""
        h, w = self.resolution
        return load_states(self.root / split / "states.npz", width=w, height=h)
