"""Training data: unpaired sim and real batches, from a benchmark folder or plain user folders.

With ``paired=True`` (the supervised ``oracle`` baseline only) batches instead hold the UVL frame and the
real photo of the *same* state, from the benchmark's ``train_real`` split. Validation batches are paired
frames of the ``test`` split, the first frames of the first sequence in one batch (for the consistency
measures) and paired frames of ``train_real`` (the gap between seen and held-out photos), when the dataset has
them (``validation_roles``).

The sim domain comes either from pre-rendered UVL frames (``sim_source="frames"``) or from scene states
rendered in the loop (``sim_source="render"``): then a batch carries state indices and the system renders
them on its own device at the current resolution stage (nvdiffrast on a GPU, embree on a CPU).

Batches are drawn by ``EpochSampler`` (``ClipSampler`` for clips): seeded per epoch, so a run resumed at an
epoch boundary sees exactly the batches an uninterrupted run sees; under DDP each rank draws its own.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytorch_lightning as pl
import torch
from torch import Tensor
from torch.utils.data import DataLoader, Dataset, Sampler

from triton_s2r.data.datasets import BenchmarkDataset, Photos, UVLFrames
from triton_s2r.render.scene import FrameState, LabelTable, Scene, load_scene
from triton_s2r.render.sim_states import load_frame_states


class EpochSampler(Sampler[int]):
    """Indices drawn uniformly from ``range(population)``, reseeded by (seed, epoch, rank).

    Under DDP (``world_size`` W > 1) each rank draws its own ``num_samples / W`` indices (rounded up), so
    Lightning must not wrap the sampler (``trainer.use_distributed_sampler=false``, as ``trainer=ddp`` sets).
    """

    def __init__(self, population: int, num_samples: int, seed: int, rank: int = 0, world_size: int = 1) -> None:
        self.population, self.seed, self.rank, self.epoch = population, seed, rank, 0
        self.num_samples = -(-num_samples // world_size)

    def set_epoch(self, epoch: int) -> None:
        """Reseed for ``epoch``; Lightning calls it before each epoch."""
        self.epoch = epoch

    def __len__(self) -> int:
        return self.num_samples

    def _generator(self) -> torch.Generator:
        return torch.Generator().manual_seed(self.seed * 100_003 + self.epoch + self.rank * 1_000_000_007)

    def __iter__(self):
        return iter(torch.randint(0, self.population, (self.num_samples,), generator=self._generator()).tolist())


class ClipSampler(EpochSampler):
    """Like ``EpochSampler`` for an ``UnpairedDataset`` whose sim frames come in clips of ``sim_clip_frames``.

    The clip length is ``data.sim_clip_frames``. Each clip is drawn uniformly, its frames in order, each paired with
    a photo drawn uniformly; a batch whose size is a multiple of ``sim_clip_frames`` then holds whole clips. Sim
    frames past the last whole clip are never drawn. Each rank's count is rounded up to whole clips.
    """

    def __init__(self, num_sim: int, num_real: int, sim_clip_frames: int, num_samples: int, seed: int,
                 rank: int = 0, world_size: int = 1) -> None:
        if num_sim < sim_clip_frames:
            raise ValueError(f"{num_sim} sim frame(s) make no clip of {sim_clip_frames}")
        super().__init__(num_sim * num_real, num_samples, seed, rank, world_size)
        self.num_samples = -(-self.num_samples // sim_clip_frames) * sim_clip_frames
        self.num_real, self.sim_clip_frames, self.num_clips = num_real, sim_clip_frames, num_sim // sim_clip_frames

    def __iter__(self):
        g = self._generator()
        clips = torch.randint(0, self.num_clips, (self.num_samples // self.sim_clip_frames, 1), generator=g)
        sim = (clips * self.sim_clip_frames + torch.arange(self.sim_clip_frames)).flatten()
        real = torch.randint(0, self.num_real, (sim.numel(),), generator=g)
        return iter((sim * self.num_real + real).tolist())


class UnpairedDataset(Dataset):
    """Item k pairs sim item ``k // len(real)`` with photo ``k % len(real)``.

    The sim item is a dict with ``uv`` (2, H, W) and ``label`` (H, W) for pre-rendered frames, or
    ``state`` (an index into the states) for rendering in the loop. Photos come in [-1, 1], with ``real_index``,
    the photo's index (its state, for the ``robot_pairing`` term).
    """

    def __init__(self, sim: UVLFrames | int, real: Photos) -> None:
        self.sim, self.real = sim, real
        self.num_sim = sim if isinstance(sim, int) else len(sim)

    def __len__(self) -> int:
        return self.num_sim * len(self.real)

    def __getitem__(self, k: int) -> dict[str, Tensor]:
        i, j = divmod(k, len(self.real))
        item = {"real": self.real[j] * 2 - 1, "real_index": torch.tensor(j)}
        if isinstance(self.sim, int):
            item["state"] = torch.tensor(i)
        else:
            g = self.sim[i]
            item["uv"], item["label"] = g.uv[0], g.label[0]
        return item


class PairedDataset(Dataset):
    """Item k: UVL frame k and photo k of one paired split, ``uv`` (2, H, W), ``label`` (H, W), ``real`` in [-1, 1]."""

    def __init__(self, sim: UVLFrames, real: Photos, limit: int | None = None) -> None:
        if len(sim) != len(real):
            raise ValueError(f"paired split needs as many UVL frames ({len(sim)}) as photos ({len(real)})")
        self.sim, self.real = sim, real
        self.size = len(sim) if limit is None else min(limit, len(sim))

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, k: int) -> dict[str, Tensor]:
        g = self.sim[k]
        return {"uv": g.uv[0], "label": g.label[0], "real": self.real[k] * 2 - 1}


class TritonDataModule(pl.LightningDataModule):
    """Unpaired training batches.

    Args:
        root: a benchmark dataset folder (``dataset.yaml``); built with ``builder`` if missing and
            ``build_preset`` is set. Give either it or ``sim_dir`` and ``real_dir``, not both.
        build_preset: preset to build at ``root`` when it holds no dataset (None: error instead).
        builder: what builds it, ``builder(root, preset=..., seed=..., sim_clip_frames=...)``:
            ``triton_s2r.tabletop.dataset.make_dataset``, which ``triton-s2r train`` hands over (the data wing
            reads datasets and does not import their generator). None: a missing dataset is an error.
        sim_source: ``"frames"`` (pre-rendered UVL files) or ``"render"`` (states rendered in the loop).
        sim_dir, real_dir, labels: a plain user dataset instead of ``root``: UVL frames, photos, and the
            label table as a dict (``names``, ``values``, ``void_value``).
        scene, real_states: with plain folders, the scene file and the real photos' states file (one frame per
            photo, in sorted file-name order: the robot's logged joints, the camera, and the poses of any
            objects that are known), for the ``robot_pairing`` loss term (``real_robot_states``).
        paired: train on UVL frames and photos of the same states (the benchmark's ``train_real`` split): the
            supervised ``oracle`` baseline. Unpaired methods leave it False.
        batch_size: images per domain per step. Reference: 5.
        sim_clip_frames: N > 1: the sim frames come in clips of N consecutive frames (a benchmark built with
            ``--sim-clip-frames N``; for ``sim_dir``, every N files in sorted order) and each batch holds
            whole clips, in order (``ClipSampler``), for ℓUC over neighbouring views. 1: independent frames.
        steps_per_epoch: batches per epoch (checkpoints are written at epoch ends).
        num_workers: data loader processes.
        seed: seeds the sampling order.
        val_frames: paired ``test`` frames translated and scored (``val/psnr``, ...) at each validation; 0 = none.
        val_sequence_frames: the first frames of the first sequence, translated as one batch at each validation
            for ``val/surface_consistency`` and ``val/warp_error``; 0 = none.
        val_train_frames: paired ``train_real`` frames (photos that training sees) scored at each validation as
            the test frames (``val/train_real/psnr``, ...): the gap to ``val/psnr`` shows memorising; 0 = none.
        photo_min_short_side, photo_max_short_side: for ``real_dir``: warn about photos whose shorter side is
            below the first (they would be upsampled); decode photos reduced to the second (``Photos``).
    """

    def __init__(
        self,
        root: str | None = None,
        build_preset: str | None = "tiny",
        builder: Callable[..., Path] | None = None,
        sim_source: str = "frames",
        sim_dir: str | None = None,
        real_dir: str | None = None,
        labels: dict | None = None,
        scene: str | None = None,
        real_states: str | None = None,
        paired: bool = False,
        batch_size: int = 5,
        sim_clip_frames: int = 1,
        steps_per_epoch: int = 100,
        num_workers: int = 0,
        seed: int = 0,
        val_frames: int = 16,
        val_sequence_frames: int = 16,
        val_train_frames: int = 16,
        photo_min_short_side: int | None = None,
        photo_max_short_side: int | None = None,
    ) -> None:
        super().__init__()
        if sim_source not in ("frames", "render"):
            raise ValueError(f"sim_source must be 'frames' or 'render', got {sim_source!r}")
        if root is not None and (sim_dir is not None or real_dir is not None):
            raise ValueError(
                f"data.root={root} and data.sim_dir/data.real_dir are both set, so it is unclear which data to train "
                f"on (an experiment may have set data.root); to train on your folders add data.root=null, to train "
                f"on the benchmark drop data.sim_dir and data.real_dir"
            )
        if root is None and (sim_dir is None or real_dir is None or labels is None):
            raise ValueError(
                "give either data.root (a benchmark dataset) or data.sim_dir, data.real_dir and data.labels"
            )
        if (scene is None) != (real_states is None) or (real_states is not None and root is not None):
            raise ValueError(
                f"data.scene={scene} and data.real_states={real_states}: the real frames' states of plain folders "
                f"need both (a benchmark dataset, data.root, has its own: leave both null)"
            )
        if sim_source == "render" and root is None:
            raise ValueError("sim_source='render' needs a benchmark dataset (data.root) with baked assets and states")
        if paired and (sim_source != "frames" or root is None):
            raise ValueError("paired=True needs a benchmark dataset (data.root) and sim_source='frames'")
        if sim_clip_frames < 1 or batch_size % sim_clip_frames:
            raise ValueError(f"data.batch_size={batch_size} must hold whole clips of data.sim_clip_frames="
                             f"{sim_clip_frames} frames: choose a multiple")
        self.root, self.build_preset, self.sim_source, self.paired = root, build_preset, sim_source, paired
        self.builder = builder
        self.sim_dir, self.real_dir, self.label_spec = sim_dir, real_dir, labels
        self.scene_file, self.real_states = scene, real_states
        self.batch_size, self.sim_clip_frames, self.steps_per_epoch = batch_size, sim_clip_frames, steps_per_epoch
        self.num_workers, self.seed, self.val_frames = num_workers, seed, val_frames
        self.val_sequence_frames, self.val_train_frames = val_sequence_frames, val_train_frames
        self.photo_min_short_side, self.photo_max_short_side = photo_min_short_side, photo_max_short_side
        self.dataset: BenchmarkDataset | None = None

    def prepare_data(self) -> None:
        """Build the benchmark preset at ``root`` if it holds no dataset yet (rank 0 only).

        The preset is built in clips of ``sim_clip_frames``.
        """
        if self.root is not None and not (Path(self.root) / "dataset.yaml").is_file() and self.build_preset:
            if self.builder is None:
                raise ValueError(f"data.root={self.root} holds no dataset and data.build_preset={self.build_preset} "
                                 f"needs a builder: pass builder=triton_s2r.tabletop.dataset.make_dataset (as "
                                 f"`triton-s2r train` does), or build it with `triton-s2r make-dataset`")
            self.builder(self.root, preset=self.build_preset, seed=self.seed, sim_clip_frames=self.sim_clip_frames)

    def setup(self, stage: str | None = None) -> None:
        """Lightning hook: open the dataset at ``root`` (if any); check its clips against ``sim_clip_frames``."""
        if self.root is not None:
            self.dataset = BenchmarkDataset.open(self.root)
            # The manifest keeps its own name for the clips of train_sim (sim_clip_frames; docs/training.md).
            built = self.dataset.splits["train_sim"].get("clip_frames", 1)
            if self.sim_clip_frames > 1 and not self.paired and built != self.sim_clip_frames:
                raise ValueError(
                    f"{self.dataset.root}: train_sim holds clips of {built} frame(s), but data.sim_clip_frames="
                    f"{self.sim_clip_frames}; build a dataset with `triton-s2r make-dataset --sim-clip-frames "
                    f"{self.sim_clip_frames}` or set data.sim_clip_frames={built}"
                )

    def training_data(self) -> tuple[LabelTable, tuple[int, int] | None, Path | None, Tensor | None]:
        """What a run keeps of its data for inference (``RunDir.save_training_data``).

        Returns:
            The label table, the frame size, the scene file and one frame's (N, 4, 4) object poses (the last three
            None for plain folders).
        """
        if self.dataset is None:
            return self.labels, None, None, None
        split = "test" if "test" in self.dataset.splits else "train_sim"
        return (self.labels, self.dataset.resolution, self.dataset.scene_file,
                self.dataset.states(split).object_poses[0])

    @property
    def labels(self) -> LabelTable:
        """The label table: the dataset's, or the one given as ``labels`` for plain folders."""
        if self.dataset is not None:
            return self.dataset.labels
        return LabelTable.from_dict(self.label_spec or {})

    def scene_and_states(self, split: str = "train_sim") -> tuple[Scene, FrameState]:
        """Baked scene and the split's states, for rendering in the loop."""
        if self.dataset is None:
            raise RuntimeError("scene_and_states() needs a benchmark dataset (data.root)")
        return load_scene(self.dataset.scene_file), self.dataset.states(split)

    @property
    def has_real_states(self) -> bool:
        """Whether the real frames' states are known: a benchmark dataset, or plain folders with ``real_states``."""
        return self.root is not None or self.real_states is not None

    def real_robot_states(self) -> tuple[Scene, FrameState]:
        """The scene and the states of the real frames (in photo order), for the ``robot_pairing`` term.

        A benchmark's ``train_real`` split poses every object. For plain folders the scene file is posed by the
        ``real_states`` file at the photos' size; objects the file does not pose are left out, since where they
        stood in the photos is unknown.

        Raises:
            ValueError: no real states, a states file whose frame count is not the photos', or a scene whose
                labels are not ``labels``'s.
        """
        if self.dataset is not None:
            return self.scene_and_states("train_real")
        if self.real_states is None or self.scene_file is None or self.real_dir is None:
            raise ValueError("the real frames' states are unknown: plain folders need data.scene and "
                             "data.real_states (data/README.md, 'States of the real frames')")
        photos = Photos(self.real_dir)
        height, width = photos.size
        scene, states, state, _ = load_frame_states(self.scene_file, self.real_states, width=width, height=height)
        if state.batch_size != len(photos):
            raise ValueError(f"{self.real_states}: {state.batch_size} frames for the {len(photos)} photos of "
                             f"{self.real_dir}; give one state per photo, in the photos' sorted file-name order")
        if scene.labels.names != self.labels.names:
            raise ValueError(f"{self.scene_file}: labels {list(scene.labels.names)} differ from data.labels.names "
                             f"{list(self.labels.names)}; use the label table of the scene the sim frames were "
                             f"rendered from (render-sim's labels.yaml)")
        links = set(scene.robot.link_labels) if scene.robot is not None else set()
        keep = [i for i, obj in enumerate(scene.objects) if obj.name in links or obj.name in states.object_names]
        return (Scene(tuple(scene.objects[i] for i in keep), scene.labels),
                FrameState(state.object_poses[:, keep].contiguous(), state.camera))

    def train_dataset(self) -> UnpairedDataset | PairedDataset:
        """The training set before sampling: unpaired sim items and photos, or aligned pairs when ``paired``.

        Sim items are UVL frames, or state indices when ``sim_source`` is ``"render"``.
        """
        if self.dataset is not None:
            if self.paired:
                return self._paired("train_real")
            real = self.dataset.photos("train_real")
            if self.sim_source == "render":
                return UnpairedDataset(self.dataset.splits["train_sim"]["frames"], real)
            return UnpairedDataset(self.dataset.uvl_frames("train_sim"), real)
        assert self.sim_dir is not None and self.real_dir is not None  # without root, __init__ requires both
        photos = Photos(self.real_dir, min_short_side=self.photo_min_short_side,
                        max_short_side=self.photo_max_short_side)
        return UnpairedDataset(UVLFrames(self.sim_dir, self.labels), photos)

    def _paired(self, split: str, limit: int | None = None) -> PairedDataset:
        assert self.dataset is not None  # called for paired training or validation, both on a benchmark dataset
        if not self.dataset.is_paired(split):
            raise ValueError(
                f"{self.dataset.root}: split {split!r} has no paired UVL and real frames; datasets built before "
                f"train_real had UVL frames gain them when the same `triton-s2r make-dataset` command is rerun"
            )
        return PairedDataset(self.dataset.uvl_frames(split), self.dataset.photos(split), limit)

    def transfer_batch_to_device(self, batch: dict[str, Tensor], device, dataloader_idx: int) -> dict:
        """Everything to the device except the sim state and photo indices, which select states on the host.

        They become lists of ints: DDP's forward moves every tensor argument to its GPU, and bringing indices
        back from there would make each step wait for the GPU.
        """
        indices = {key: batch.pop(key).tolist() for key in ("state", "real_index") if key in batch}
        return {**super().transfer_batch_to_device(batch, device, dataloader_idx), **indices}

    def train_dataloader(self) -> DataLoader:
        """Lightning hook: batches drawn by ``EpochSampler`` (``ClipSampler`` for sim clips), a share per rank."""
        dataset = self.train_dataset()
        num_samples = self.steps_per_epoch * self.batch_size
        rank, world_size = 0, 1
        if self.trainer is not None and self.trainer.world_size > 1:
            # Lightning's own distributed wrapper would shuffle the indices across ranks, splitting clips.
            # Private: Lightning 2.x has no public read of the Trainer's use_distributed_sampler.
            connector = getattr(self.trainer, "_accelerator_connector", None)
            if getattr(connector, "use_distributed_sampler", False):
                raise ValueError("with several processes set trainer.use_distributed_sampler=false (trainer=ddp "
                                 "does): each rank draws its own batches")
            rank, world_size = self.trainer.global_rank, self.trainer.world_size
        if self.sim_clip_frames > 1 and not self.paired:
            assert isinstance(dataset, UnpairedDataset)  # not paired
            sampler = ClipSampler(dataset.num_sim, len(dataset.real), self.sim_clip_frames, num_samples, self.seed,
                                  rank, world_size)
        else:
            sampler = EpochSampler(len(dataset), num_samples, self.seed, rank, world_size)
        # Pinned batches copy to the GPU without waiting for it (a copy from pageable memory waits first).
        return DataLoader(dataset, batch_size=self.batch_size, sampler=sampler, num_workers=self.num_workers,
                          drop_last=True, persistent_workers=self.num_workers > 0, pin_memory=torch.cuda.is_available())

    def has_validation(self) -> bool:
        """Whether there are paired test frames to score after each epoch."""
        return self.val_frames > 0 and self.dataset is not None and self.dataset.is_paired("test")

    def validation_sequence(self) -> str | None:
        """The sequence split whose first ``val_sequence_frames`` frames are validated, or None."""
        if not self.has_validation() or self.val_sequence_frames < 2:
            return None
        assert self.dataset is not None  # has_validation() checks it
        return next((split for split in sorted(self.dataset.splits)
                     if split.startswith("sequences/") and self.dataset.is_paired(split)), None)

    def validation_roles(self) -> list[str]:
        """What each of ``val_dataloader``'s loaders holds, in order: ``"test"``, ``"sequence"``, ``"train_real"``."""
        if not self.has_validation():
            return []
        assert self.dataset is not None  # has_validation() checks it
        train = self.val_train_frames > 0 and self.dataset.is_paired("train_real")
        return ["test", *["sequence"] * (self.validation_sequence() is not None), *["train_real"] * train]

    def val_dataloader(self) -> list[DataLoader]:
        """One loader per ``validation_roles()`` (none without a test split), in their order."""
        loaders = []
        for role in self.validation_roles():
            if role == "sequence":
                sequence = self.validation_sequence()
                assert sequence is not None  # a role only where there is one
                loaders.append(DataLoader(self._paired(sequence, self.val_sequence_frames),
                                          batch_size=self.val_sequence_frames, num_workers=self.num_workers))
            else:
                frames = self.val_frames if role == "test" else self.val_train_frames
                loaders.append(DataLoader(self._paired(role, frames), batch_size=self.batch_size,
                                          num_workers=self.num_workers))
        return loaders
