"""``triton-s2r translate``: translate a simulated sequence with a trained run, frame by frame, statelessly.

Examples::

    triton-s2r translate outputs/runs/demo outputs/data/small --out outputs/videos/seq_000.mp4 --side-by-side
    triton-s2r translate outputs/runs/demo outputs/data/small --sequence seq_001 --out frames/   # PNG folder
    triton-s2r translate outputs/runs/demo my_sim/uvl --out my_sim.mp4                        # UVL files
    triton-s2r translate outputs/runs/demo outputs/data/small/test/states.npz --out test.mp4 --resolution 256

INPUT is one of

* a benchmark dataset root (``dataset.yaml``): its first video sequence, or ``--sequence NAME``;
* a dataset split or sequence folder (``uvl/``, maybe ``real/`` and ``states.npz``);
* a folder of UVL frames (reference TRITON format, ``.exr`` or 16-bit ``.png``), decoded with the label
  table of the enclosing dataset or else the run's training data;
* a ``states.npz`` file (or a folder holding only one), rendered on the fly with the baked scene of the
  enclosing dataset, ``--scene``, or the run's training dataset (nvdiffrast on a GPU, embree on the CPU).

Frames are rendered or read, translated and written one batch at a time (bounded memory); the output
appears only when the last frame is written (see ``video.py``).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor
from tqdm import tqdm

from triton_s2r.data.datasets import BenchmarkDataset, DatasetError, Photos, UVLFrames, load_states
from triton_s2r.inference.translator import TranslationOutput, Translator
from triton_s2r.inference.video import check_fps, frame_writer, output_kind, side_by_side, to_uint8
from triton_s2r.render.gbuffer import GBuffer
from triton_s2r.render.preview import preview_image
from triton_s2r.render.rasterizer import UVLRasterizer, make_rasterizer, nvdiffrast_available
from triton_s2r.render.scene import FrameState, LabelTable, Scene, load_scene

#: Panels of ``--side-by-side``, left to right ("real" only when the input has paired real frames).
PANELS = ("uvl", "texture", "translation", "real")


@dataclass
class FrameSource:
    """A sequence of G-buffers to translate, with the paired real frames when the input has them.

    Exactly one of ``uvl`` (files read on demand) and ``state`` (rendered on demand) is set.

    Attributes:
        description: what the input is, for messages.
        uvl: UVL frames, read one at a time.
        scene, state, rasterizer: scene states to render.
        supersample: render at this factor and average the texture (states only).
        real: paired real frames, same count as the sim frames.
    """

    description: str
    uvl: UVLFrames | None = None
    scene: Scene | None = None
    state: FrameState | None = None
    rasterizer: UVLRasterizer | None = field(default=None, repr=False)
    supersample: int = 1
    real: Photos | None = None

    def __len__(self) -> int:
        if self.uvl is not None:
            return len(self.uvl)
        assert self.state is not None  # exactly one of uvl and state is set
        return self.state.batch_size

    def gbuffer(self, index: list[int]) -> GBuffer:
        """Frames ``index`` as one G-buffer at ``supersample`` times the output size."""
        if self.uvl is not None:
            return GBuffer.cat([self.uvl[i] for i in index])
        assert self.scene is not None and self.state is not None and self.rasterizer is not None  # uvl is None
        return self.rasterizer.render(self.scene, self.state.select(index), supersample=self.supersample)

    def real_frames(self, index: list[int], size: tuple[int, int]) -> Tensor | None:
        """Real frames ``index``, (B, 3, H, W) in [0, 1], resized (area) to ``size`` if they differ."""
        if self.real is None:
            return None
        images = torch.stack([self.real[i] for i in index])
        if tuple(images.shape[-2:]) != tuple(size):  # states rendered at another --resolution
            images = F.interpolate(images, size=size, mode="area" if images.shape[-1] > size[1] else "bilinear")
        return images


@dataclass(frozen=True)
class TranslateResult:
    """What ``translate`` wrote.

    Attributes:
        out: the mp4 file or PNG folder (not written with ``dry_run``).
        num_frames: frames translated.
        frame_size: (H, W) of each written frame (the panel for ``side_by_side``).
        panels: the panels of each frame, left to right.
        source: description of the input.
        device: where the model ran.
        seconds: wall time of the translation loop.
    """

    out: Path
    num_frames: int
    frame_size: tuple[int, int]
    panels: tuple[str, ...]
    source: str
    device: str
    seconds: float


def find_dataset_root(path: Path) -> Path | None:
    """The nearest folder at or above ``path`` that holds a ``dataset.yaml``."""
    for folder in [path, *path.parents] if path.is_dir() else path.parents:
        if (folder / "dataset.yaml").is_file():
            return folder
    return None


def pick_split(dataset: BenchmarkDataset, sequence: str | None) -> str:
    """The split to translate: ``sequence`` (``seq_001``, ``sequences/seq_001``, ``test``) or the first sequence."""
    with_sim = [name for name, info in dataset.splits.items() if info["sim"]]
    if sequence is None:
        sequences = sorted(n for n in with_sim if n.startswith("sequences/"))
        if sequences or "test" in with_sim:
            return sequences[0] if sequences else "test"
        raise DatasetError(f"{dataset.root}: no sequence or test split with sim frames; pass --sequence")
    for name in (sequence, f"sequences/{sequence}"):
        if name in with_sim:
            return name
    raise ValueError(f"--sequence {sequence!r} is not a split with sim frames of {dataset.root}; choose one of "
                     f"{', '.join(sorted(with_sim))}")


def _check_labels(labels: LabelTable, translator: Translator, where: Path) -> None:
    if labels.num_labels != translator.num_labels:
        raise ValueError(f"{where}: {labels.num_labels} labels but the run's model knows {translator.num_labels}; "
                         f"translate data of the scene the run was trained on")
    known = translator.label_table
    if known is not None and known.names != labels.names:
        raise ValueError(f"{where}: labels {list(labels.names)} differ from the run's training labels "
                         f"{list(known.names)}; translate data of the scene the run was trained on")


def _states_source(
    path: Path,
    translator: Translator,
    *,
    scene: str | os.PathLike | None,
    resolution: int | None,
    supersample: int,
    backend: str,
) -> FrameSource:
    root = find_dataset_root(path)
    dataset = BenchmarkDataset.open(root, check_files=False) if root is not None else None
    if scene is not None:
        scene_obj = load_scene(scene)
    elif dataset is not None:
        scene_obj = load_scene(dataset.scene_file)
    else:
        scene_obj = translator.scene()
    _check_labels(scene_obj.labels, translator, path)
    size = dataset.resolution if dataset is not None else translator.run.resolution() if translator.run else None
    if size is None:
        if resolution is None:
            raise ValueError(f"{path}: no dataset.yaml above it gives the frame size its cameras were made for, "
                             f"nor does the run record one; pass --resolution")
        size = (resolution, resolution)
    height, width = size
    state = load_states(path, width=width, height=height)
    if state.object_poses.shape[1] != scene_obj.num_objects:
        raise ValueError(f"{path}: poses of {state.object_poses.shape[1]} objects but the scene has "
                         f"{scene_obj.num_objects}; pass the scene these states belong to (--scene)")
    if resolution is not None and (resolution, resolution) != (height, width):
        state = FrameState(state.object_poses, state.camera.resized(resolution, resolution))
    if backend == "auto":  # follow the model's device: no GPU rendering for a CPU translation
        backend = "nvdiffrast" if translator.device.type == "cuda" and nvdiffrast_available() else "embree"
    rasterizer = make_rasterizer(backend, device=translator.device if backend == "nvdiffrast" else None)
    real_dir = path.parent / "real"
    real = Photos(real_dir) if real_dir.is_dir() else None
    if real is not None and len(real) != state.batch_size:
        real = None  # a states file beside an unrelated photo folder: show no pairs rather than wrong ones
    return FrameSource(f"{path} ({state.batch_size} states, {rasterizer.name} rendering at "
                       f"{state.camera.height}x{state.camera.width})", scene=scene_obj, state=state,
                       rasterizer=rasterizer, supersample=supersample, real=real)


def open_input(
    path: str | os.PathLike,
    translator: Translator,
    *,
    sequence: str | None = None,
    scene: str | os.PathLike | None = None,
    resolution: int | None = None,
    supersample: int = 1,
    backend: str = "auto",
) -> FrameSource:
    """Resolve INPUT (see the module docstring) into a ``FrameSource``.

    Args:
        path: dataset root, split/sequence folder, UVL folder or ``states.npz``.
        translator: supplies the label table and scene when the input has none, and the device for rendering.
        sequence: split of a dataset root (default: the first of ``sequences/``, else ``test``).
        scene: scene file for rendering states (default: the enclosing dataset's, else the run's).
        resolution: square output size for rendered states (default: the dataset's).
        supersample: render states at this factor (antialiasing); UVL files are used as they are.
        backend: ``auto``, ``embree`` or ``nvdiffrast``, for rendering states.

    Raises:
        FileNotFoundError, ValueError (DatasetError, UVLFileError): naming the file and the fix.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"input not found: {path}; pass a dataset root, a sequence folder, a folder of "
                                f"UVL frames or a states.npz file")
    if (path / "dataset.yaml").is_file():
        dataset = BenchmarkDataset.open(path)  # also checks that no listed frame is missing
        path = path / pick_split(dataset, sequence)
    elif sequence is not None:
        raise ValueError(f"--sequence applies to a dataset root (a folder with dataset.yaml), not to {path}")
    if path.is_file():
        if path.suffix != ".npz":
            raise ValueError(f"{path}: a file input must be a states .npz file written by make-dataset or render-sim "
                             f"(render a simulator trajectory with `triton-s2r render-sim SCENE {path.name} --out DIR` "
                             f"and translate DIR/states.npz)")
        states = path
    else:  # a split folder without UVL frames (train_real) still has its states
        states = path / "states.npz" if (path / "states.npz").is_file() and not (path / "uvl").is_dir() else None
    if states is not None:
        return _states_source(states, translator, scene=scene, resolution=resolution, supersample=supersample,
                              backend=backend)
    if resolution is not None or supersample != 1 or scene is not None:
        raise ValueError("--resolution, --supersample and --scene apply to rendered states (a states.npz input); "
                         f"the UVL frames of {path} are translated as they were rendered")

    folder = path / "uvl" if (path / "uvl").is_dir() else path
    root = find_dataset_root(folder)
    if root is None:  # a plain folder: its label values are those of the run's training data
        labels = translator.labels
    else:
        dataset = BenchmarkDataset.open(root, check_files=False)
        labels, split = dataset.labels, folder.parent.relative_to(root).as_posix()
        if split in dataset.splits and dataset.splits[split]["sim"]:
            missing = [p for p in dataset.frame_paths(split, "uvl") if not p.is_file()]
            if missing:
                raise DatasetError(f"{missing[0]}: UVL frame missing ({len(missing)} of split {split!r} are); "
                                   f"rerun `triton-s2r make-dataset` with the same arguments to finish the dataset")
    _check_labels(labels, translator, folder)
    uvl = UVLFrames(folder, labels)
    real = Photos(folder.parent / "real") if folder.name == "uvl" and (folder.parent / "real").is_dir() else None
    if real is not None and len(real) != len(uvl):
        raise DatasetError(f"{folder.parent / 'real'}: {len(real)} real frames for {len(uvl)} UVL frames in "
                           f"{folder}; the pairs must match one to one")
    return FrameSource(f"{folder} ({len(uvl)} UVL frames)", uvl=uvl, real=real)


def panel_images(gbuffer: GBuffer, output: TranslationOutput, real: Tensor | None, num_labels: int) -> np.ndarray:
    """The side-by-side panel: UVL visualisation | texture projection | translation | real (if any).

    Args:
        gbuffer: the frames at output resolution (B, ., H, W).
        output: their translation.
        real: (B, 3, H, W) in [0, 1], or None.
        num_labels: K, scales the label channel of the UVL visualisation.

    Returns:
        (B, H, n*W, 3) uint8, n = 3 or 4.
    """
    images = [preview_image(gbuffer, num_labels)]
    for image in (output.texture, output.translation, real):
        if image is not None:
            images.append(to_uint8(image.float().permute(0, 2, 3, 1).cpu().numpy()))
    return side_by_side(*images)


def translate_source(
    translator: Translator,
    source: FrameSource,
    out: str | os.PathLike,
    *,
    side_by_side: bool = False,
    batch_size: int = 16,
    fps: float = 10.0,
    progress: bool = True,
) -> TranslateResult:
    """Translate every frame of ``source`` and write them to ``out`` (mp4 or PNG folder) as they are ready.

    Args:
        translator: the loaded run.
        source: from ``open_input``.
        out: ``*.mp4`` or a folder (see ``video.frame_writer``); appears only once complete.
        side_by_side: write the ``panel_images`` panel instead of the translation alone.
        batch_size: frames per model call.
        fps: video frame rate.
        progress: show a tqdm progress bar.
    """
    if batch_size < 1:
        raise ValueError(f"batch size must be >= 1, got {batch_size}")
    check_fps(fps)
    out = Path(out)
    output_kind(out)  # fail on a bad output path or frame rate before any work
    k = source.supersample
    panels = ("translation",)
    frame_size = None
    start = time.perf_counter()
    with frame_writer(out, fps=fps) as write, tqdm(total=len(source), unit="frame", desc="translate",
                                                   disable=not progress) as bar:
        for first in range(0, len(source), batch_size):
            index = list(range(first, min(first + batch_size, len(source))))
            gbuffer = source.gbuffer(index)
            output = translator(gbuffer, supersample=k)
            if side_by_side:
                small = GBuffer(gbuffer.uv[..., ::k, ::k], gbuffer.label[..., ::k, ::k])
                real = source.real_frames(index, (output.mask.shape[-2], output.mask.shape[-1]))
                frames = panel_images(small, output, real, translator.num_labels)
                panels = PANELS if real is not None else PANELS[:3]
            else:
                frames = to_uint8(output.translation.permute(0, 2, 3, 1).cpu().numpy())
            write(frames)
            frame_size = frames.shape[1:3]
            bar.update(len(index))
    frame_size = tuple(frame_size)  # pyright: ignore[reportArgumentType]  # set by the first of the source's batches
    return TranslateResult(out, len(source), frame_size, panels, source.description, str(translator.device),
                           time.perf_counter() - start)


def translate(
    run_dir: str | os.PathLike,
    input: str | os.PathLike,
    out: str | os.PathLike,
    *,
    side_by_side: bool = False,
    batch_size: int = 16,
    device: str = "auto",
    checkpoint: str | None = None,
    sequence: str | None = None,
    scene: str | os.PathLike | None = None,
    resolution: int | None = None,
    supersample: int = 1,
    backend: str = "auto",
    fps: float = 10.0,
    texture_resolution: int | None = 1024,
    compile: bool = False,
    progress: bool = True,
) -> TranslateResult:
    """Load a run, resolve INPUT and write the translated sequence (the ``translate`` subcommand).

    Args are those of ``Translator.from_run_dir``, ``open_input`` and ``translate_source``.
    """
    check_fps(fps)  # before loading the run: a bad rate fails in a second, not after the model loads
    torch.backends.cudnn.benchmark = True  # batches of one shape: let cuDNN pick its fastest kernels (+8%)
    translator = Translator.from_run_dir(run_dir, checkpoint=checkpoint, device=device,
                                         texture_resolution=texture_resolution, compile=compile)
    source = open_input(input, translator, sequence=sequence, scene=scene, resolution=resolution,
                        supersample=supersample, backend=backend)
    return translate_source(translator, source, out, side_by_side=side_by_side, batch_size=batch_size, fps=fps,
                            progress=progress)
