"""TritonSystem: the TRITON GAN step as a LightningModule with manual optimization (docs/method.md §4-5).

Per batch (``training_step``): one forward pass of texture and both translators; then the discriminator phase
on the detached translations (no recomputation, docs/method.md §5.2, §8.8); then the generator + texture phase.
The jobs around the step are callbacks that the system hands its settings (``configure_callbacks``,
``triton_s2r.training.callbacks``): the weight average, the non-finite guard, previews and RNG states.
Lightning pitfalls avoided on purpose:

* ``global_step`` counts optimizer steps (two per batch here), so budgets are epochs of
  ``steps_per_epoch`` batches, and the resolution and learning-rate schedules count ``batches_done``.
* ``Trainer(gradient_clip_val=...)`` is refused in manual mode; clipping uses ``self.clip_gradients``.
* Mixed precision is bf16 autocast (no grad scaler, so nothing to unscale before clipping); every loss
  and the texture splatting run in fp32.

The step never waits for the GPU: a non-finite loss makes the fused Adam step a no-op on the device (its
``found_inf`` input, the mechanism of PyTorch's GradScaler) instead of a host-side ``if``; ``NonFiniteGuard``
counts the skipped steps on the device and reads them back only now and then; the batch counter that drives
the schedules is kept on the host.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, cast

import pytorch_lightning as pl
import torch
import torch._functorch.config as functorch_config
from pytorch_lightning.utilities import rank_zero_warn
from torch import Tensor

from triton_s2r.data.augment import (
    augment_sim,
    centre_crop_photos,
    check_diff_augment_policy,
    crop_photos,
    diff_augment,
    random_crop_windows,
)
from triton_s2r.evaluation import metrics
from triton_s2r.losses import (
    discriminator_adversarial_loss,
    generator_adversarial_loss,
    mean_logit,
    r1_penalty,
    reconstruction_loss,
    reconstruction_losses,
    surface_chroma_consistency_loss,
    surface_consistency_loss,
    texture_reality_loss,
    texture_reality_target,
)
from triton_s2r.losses.colour_distribution import colour_distribution_loss, top_fraction
from triton_s2r.losses.label_colours import label_colour_loss
from triton_s2r.losses.settings import LossSettings
from triton_s2r.models.discriminator import MultiScaleDiscriminator
from triton_s2r.models.triton import SimBatch, TritonModel, to_unit
from triton_s2r.render.gbuffer import VOID, GBuffer
from triton_s2r.render.scene import FrameState, LabelTable
from triton_s2r.training.background_compile import BackgroundCompile
from triton_s2r.training.callbacks import (
    CompileNotice,
    LearningRateDecay,
    NonFiniteGuard,
    Previews,
    RandomStates,
    WeightAverage,
)
from triton_s2r.training.compile_artifacts import CompileArtifacts
from triton_s2r.training.ddp import PhaseGradients, check_sigterm_every
from triton_s2r.training.gradient_norms import GradientNormRecord, RelativeGradientClip
from triton_s2r.training.object_crops import crop_windows, draw_centres, photo_objectness, sim_objectness
from triton_s2r.training.robot_pairing import RobotViews
from triton_s2r.training.step import Forward, StepInputs, StepResult, logging_batch

if TYPE_CHECKING:
    from pytorch_lightning.utilities.parsing import AttributeDict

    from triton_s2r.data.datamodule import TritonDataModule

LOSS_TERMS = ("adversarial", "reconstruction", "content", "cycle", "surface_consistency", "surface_chroma_consistency",
              "texture_reality", "robot_pairing", "texture_pairing", "object_adversarial", "object_colours",
              "label_colours")
OBJECT_COLOUR_DIRECTIONS = 16  # object_colours: random directions of colour space per batch (sliced Wasserstein)
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


class TritonSystem(pl.LightningModule):
    """Trains texture, translators and discriminators.

    Args:
        model: texture + sim input + both auto-encoders.
        discriminator_sim: D_A on x_a (``sim_input.out_channels`` channels).
        discriminator_real: D_B on photos (3 channels).
        losses: weights, criteria and switches of the loss terms (the ``loss`` config group); its weights may
            name only this system's ``loss_terms``.
        lr: learning rate of generators and discriminators. Reference: 1e-4.
        texture_lr_factor: texture learning rate = lr x this. Reference: 10.
        discriminator_lr_factor: discriminators' learning rate = lr x this (two time-scale updates, TTUR).
            Reference: 1.
        betas: Adam betas. Reference: (0.5, 0.999).
        weight_decay: Adam (coupled L2) weight decay. Reference: 1e-4.
        lr_step_size: halve (``lr_gamma``) every this many batches; None = constant (the released config).
        lr_gamma: StepLR factor. Paper: 0.5 every 100k.
        lr_decay_from: from this fraction of the run's budget (batches or time) on, every rate falls linearly to 0
            at its end (``callbacks.LearningRateDecay``); None = off. Not with ``lr_step_size``.
        resolution_schedule: ``[[batch, short_side], ...]``: from ``batch`` on, the shorter image side is
            resized to about ``short_side`` (plus up to ``resize_jitter``) before cropping. Paper:
            [[0, 320], [50000, 420], [100000, 512]].
        resize_jitter: relative random enlargement of the short side (augmentation).
        crop_size: square training crops. Reference: 256.
        discriminator_augment: augmentations of every discriminator input, real and translated alike, from
            ``triton_s2r.data.augment.DIFF_AUGMENTATIONS`` (``translation``, ``cutout``); empty = none, as the
            reference (docs/method.md §3.2.1).
        supersample: sim G-buffers rendered in the loop at this factor for antialiased textures.
        render_backend: backend for rendering in the loop (``auto``, ``embree``, ``nvdiffrast``).
        gradient_clip_val: clip the gradient norm of each step (None = off).
        gradient_clip_ratio: clip each phase's gradient norm to this multiple (> 1) of the running mean of its
            earlier norms (``RelativeGradientClip``; None = off).
        max_nonfinite_steps: consecutive skipped (non-finite) steps before an error (``NonFiniteGuard``).
        ema_decay: decay per batch of a moving average of the translator's weights (``WeightAverage``), which
            validation, ``Translator`` and every CLI command then use. None = off.
        channels_last: use channels-last memory format for the networks (faster convolutions on GPUs).
        compile: ``torch.compile`` each network (both encoders and decoders, both discriminators), the
            texture and the reconstruction and texture-reality losses on their own: each compiles once per
            input shape and is reused wherever the step calls it (one graph of the whole step took over 8
            minutes to compile on an H100).
        compile_mode: ``torch.compile`` mode when ``compile``, one of ``COMPILE_MODES``: ``"default"``,
            ``"reduce-overhead"`` (CUDA graphs: each compiled piece's kernels replayed as one launch),
            ``"max-autotune"`` (with CUDA graphs) or ``"max-autotune-no-cudagraphs"``.
        activation_memory_budget: with ``compile``, the share (0, 1] of the backward pass's saved activations that
            the compiled pieces keep; below 1, AOTAutograd's partitioner recomputes the cheapest of the rest (the
            reflection padding first) in the backward pass. Process-wide (``torch._functorch.config``), read when
            the pieces compile; their compile-cache entries are keyed by it (docs/training.md, "Speed options").
        compile_in_background: with ``compile``, train eagerly from the first batch while a child process
            compiles the same config into Inductor's cache, then compiled from that cache (``BackgroundCompile``;
            single-process runs).
        compile_cache_file: with ``compile``, a file of compiled pieces to load before the first batch when it
            exists and to write when training ends if the run had to compile any, so that a run on another machine
            with the same torch and GPU starts from it instead of compiling (``CompileArtifacts``). None = off.
        preview_every_n_batches: batches between image grids in ``previews/`` and W&B (``Previews``).
        robot_pairing_labels: the robot's labels, whose pixels the ``robot_pairing`` term compares (used only when
            its weight or ``texture_pairing``'s is set; docs/method.md §4.7).
        robot_pairing_void: the ``robot_pairing`` term also compares the pixels its render leaves void (the
            background behind the robot and the static objects, which the photo shows as they are wherever no moving
            object stands in front of it; docs/method.md §4.7).
        discriminator_object: D_O on windows around the objects, in the translations and the photos (3 channels;
            needed when ``object_adversarial`` has a weight, else unused; docs/method.md §4.9).
        object_crop_fraction: the object windows' side as a fraction of ``crop_size`` (rounded to an even number of
            pixels).
        object_crop_size: the side the windows are resampled to, D_O's input.
        shared_object_hint: the moving objects (the labels neither of ``robot_pairing_labels`` nor posed alike in
            every real frame) share one value in x_a's hint (``SimInput.share_label_hint``), so their textures
            alone tell them apart; needs the real frames' states (docs/method.md §2.5).
        tracked_objects: the real frames' states pose the objects that move as well (tracked by tags, motion
            capture or a pose estimator): the renders of ``robot_pairing`` and ``texture_pairing`` show them, the
            first compares their pixels with the robot's, the second fits their textures to the photos, and the
            shaded output shades them like the robot (docs/method.md §4.7.1).
        shade_objects: with the shaded output (``model.translator.shading_channels`` > 0), the moving objects
            show their shaded texture like the other surfaces (True) or G_B's own image (False: only the robot and
            the static objects are shaded; ``TritonModel.draw_labels``). False needs the real frames' states to
            tell the moving objects (without them every surface is shaded, with a warning); no effect without
            shading (docs/method.md §3.3).
    """

    loss_terms: tuple[str, ...] = LOSS_TERMS
    # For the type checker only (no value, so nothing changes at run time):
    hparams: AttributeDict  # what save_hyperparameters leaves (Lightning types it AttributeDict | MutableMapping)
    batches_done: Tensor  # 0-dim int64 buffer, registered in __init__
    model_ema: TritonModel  # set by the WeightAverage callback when system.ema_decay is set

    def __init__(
        self,
        model: TritonModel,
        discriminator_sim: MultiScaleDiscriminator,
        discriminator_real: MultiScaleDiscriminator,
        losses: LossSettings,
        lr: float = 1e-4,
        texture_lr_factor: float = 10.0,
        discriminator_lr_factor: float = 1.0,
        betas: tuple[float, float] = (0.5, 0.999),
        weight_decay: float = 1e-4,
        lr_step_size: int | None = None,
        lr_gamma: float = 0.5,
        lr_decay_from: float | None = None,
        resolution_schedule: list[list[int]] | None = None,
        resize_jitter: float = 0.1,
        crop_size: int = 256,
        discriminator_augment: Sequence[str] = (),
        supersample: int = 1,
        render_backend: str = "auto",
        gradient_clip_val: float | None = None,
        gradient_clip_ratio: float | None = None,
        max_nonfinite_steps: int = 20,
        ema_decay: float | None = None,
        channels_last: bool = False,
        compile: bool = False,
        compile_mode: str = "default",
        activation_memory_budget: float = 1.0,
        compile_in_background: bool = False,
        compile_cache_file: str | None = None,
        preview_every_n_batches: int = 250,
        robot_pairing_labels: Sequence[str] = ("robot_base", "robot_arm", "robot_hand"),
        robot_pairing_void: bool = True,
        discriminator_object: MultiScaleDiscriminator | None = None,
        object_crop_fraction: float = 0.25,
        object_crop_size: int = 64,
        shared_object_hint: bool = False,
        tracked_objects: bool = False,
        shade_objects: bool = False,
    ) -> None:
        super().__init__()
        self.losses = losses
        self.loss_weights = losses.weights(self.loss_terms, type(self).__name__)
        # Plain values only (logged, and saved in checkpoints, which load with weights_only=True): the arguments
        # but the networks, then (a second call adds to the first) the loss settings as a mapping.
        self.save_hyperparameters(ignore=["model", "discriminator_sim", "discriminator_real", "discriminator_object",
                                          "losses"])
        self.save_hyperparameters({"losses": losses.as_dict()})
        self.automatic_optimization = False
        self._relative_clips = ({} if gradient_clip_ratio is None else
                                {phase: RelativeGradientClip(gradient_clip_ratio) for phase in ("d", "g")})
        self.model = model
        self.discriminator_sim = discriminator_sim
        self.discriminator_real = discriminator_real
        self.discriminator_object = discriminator_object if self.loss_weights.get("object_adversarial") else None
        if self.loss_weights.get("object_adversarial") and discriminator_object is None:
            raise ValueError("loss.loss_weights.object_adversarial needs model.discriminator_object; keep that group "
                             "of model/triton.yaml or set the weight to 0")
        self.object_window = 2 * max(1, round(object_crop_fraction * crop_size / 2))
        if self.discriminator_object is not None and object_crop_size < self.discriminator_object.min_input_side():
            raise ValueError(f"system.object_crop_size {object_crop_size} is too small for model.discriminator_object "
                             f"(at least {self.discriminator_object.min_input_side()} px)")
        if discriminator_sim.in_channels != model.sim_input.out_channels:
            raise ValueError(f"x_a has {model.sim_input.out_channels} channels but discriminator_sim takes "
                             f"{discriminator_sim.in_channels}; leave model.discriminator_sim.in_channels at its "
                             f"default, which follows x_a ({model.sim_input.out_channels})")
        for net in (discriminator_sim, discriminator_real):
            if crop_size < net.min_input_side():
                raise ValueError(f"system.crop_size {crop_size} is too small for the discriminators: "
                                 f"{net.num_scales} scales of {net.num_layers} layers need crops of at least "
                                 f"{net.min_input_side()} px; raise system.crop_size or lower "
                                 "model.discriminator_sim.num_scales (D_B follows it)")
        if lr_decay_from is not None and lr_step_size is not None:
            raise ValueError("system.lr_decay_from and system.lr_step_size are two schedules of one rate; set one "
                             "of them to null")
        check_diff_augment_policy(discriminator_augment)
        self.discriminator_augment = tuple(discriminator_augment)
        self.schedule = sorted((int(b), int(s)) for b, s in (resolution_schedule or [[0, crop_size]]))
        if any(s < crop_size for _, s in self.schedule):
            raise ValueError(f"every resolution stage must be >= crop_size {crop_size}: {self.schedule}")
        self.register_buffer("batches_done", torch.zeros((), dtype=torch.long))
        self.batches_trained = 0  # host copy of batches_done (reading the buffer would wait for the GPU)
        self.last_step: StepResult | None = None  # for the callbacks, until the batch ends
        self.progress: dict[str, Tensor] = {}  # the last batch's losses, on the device
        # Mean logits of the last D step, on the device: D_B's of its photos (photo_score) and of x_ab
        # (translation_score), D_A's of the renders x_a (render_score) and of x_ba (real_to_sim_score)
        self.scores: dict[str, Tensor] = {}
        # Each phase's gradient norm before clipping, on the device: a spike in one batch is a discriminator or
        # generator thrown off (docs/training.md#validation-and-training-curves)
        self.gradient_norms = GradientNormRecord()
        self._side_tensors: dict[int, Tensor] = {}
        self._render = None  # (scene, states, rasterizer) when the sim domain is rendered in the loop
        self._robot_views: RobotViews | None = None  # the real frames' robot and static objects
        self._background_labels: list[int] = []
        self._label_names: tuple[str, ...] = ()  # ids 1..K, for val/psnr/<label> and val/colour_error/<label>
        self._validation_roles: list[str] = []  # what each validation loader holds (attach_data)
        self._label_colours: tuple[Tensor, Tensor] | None = None  # (targets (K+1, 3), has_target (K+1,)), on the device
        self._phase_gradients = PhaseGradients()  # under DDP: which gradients the next backward pass averages
        if channels_last:
            for net in (model.generator_sim, model.generator_real, discriminator_sim, discriminator_real):
                net.to(memory_format=torch.channels_last)  # pyright: ignore[reportCallIssue]  # torch's overloads omit it
        if compile_mode not in COMPILE_MODES:
            raise ValueError(f"system.compile_mode must be one of {COMPILE_MODES}, got {compile_mode!r}")
        if not 0 < activation_memory_budget <= 1:
            raise ValueError(f"system.activation_memory_budget must be in (0, 1], got {activation_memory_budget}")
        self._reconstruction_losses, self._texture_reality_loss = reconstruction_losses, texture_reality_loss
        self._cuda_graphs = False
        if compile:
            functorch_config.activation_memory_budget = activation_memory_budget
            # Inductor's mix-order-reduction fusion failed an assertion on a backward pass (torch 2.11).
            # torch.compile takes a mode or options, not both: the mode's options plus ours. No public API
            # lists a mode's options; torch.compile's own docstring points to this one.
            options = {**torch._inductor.list_mode_options(compile_mode), "triton.mix_order_reduction": False}
            self._cuda_graphs = options.get("triton.cudagraphs", False)
            for net in (model.generator_sim.encoder, model.generator_sim.decoder, model.generator_real.encoder,
                        model.generator_real.decoder, *self._discriminators(), model.texture):
                net.compile(dynamic=False, options=options)  # in place: parameter names and checkpoints stay the same
            # MS-SSIM is dozens of small kernels per level; compiled, each call site's shapes get fused kernels.
            self._reconstruction_losses = torch.compile(reconstruction_losses, dynamic=False, options=options)
            self._texture_reality_loss = torch.compile(texture_reality_loss, dynamic=False, options=options)

    # ------------------------------------------------------------------------------------ setup

    def configure_optimizers(self):
        """Lightning hook: Adam for G (groups ``generator`` and ``texture``) and for D, with StepLR if ``lr_step_size``.

        The texture's rate is ``lr * texture_lr_factor``, the discriminators' ``lr * discriminator_lr_factor``.
        """
        h = self.hparams
        texture = list(self.model.texture.parameters())
        generators = [*self.model.generator_sim.parameters(), *self.model.generator_real.parameters()]
        groups = [{"name": "generator", "params": generators, "lr": h.lr}]
        if texture:
            groups.append({"name": "texture", "params": texture, "lr": h.lr * h.texture_lr_factor})
        # fused: one kernel per step, and it honours found_inf (see _optimize)
        opt_g = torch.optim.Adam(groups, betas=tuple(h.betas), weight_decay=h.weight_decay, fused=True)
        discriminators = [p for d in self._discriminators() for p in d.parameters()]
        opt_d = torch.optim.Adam([{"name": "discriminator", "params": discriminators}],
                                 lr=h.lr * h.discriminator_lr_factor,
                                 betas=tuple(h.betas), weight_decay=h.weight_decay, fused=True)
        for optimizer in (opt_g, opt_d):
            for group in optimizer.param_groups:
                group["base_lr"] = group["lr"]  # what LearningRateDecay scales
        if h.lr_step_size is None:
            return [opt_g, opt_d]
        steps = [torch.optim.lr_scheduler.StepLR(o, h.lr_step_size, h.lr_gamma) for o in (opt_g, opt_d)]
        return [opt_g, opt_d], steps

    def configure_callbacks(self) -> list[pl.Callback]:
        """The jobs around the step, with this system's settings; Lightning adds them to any ``Trainer``."""
        h = self.hparams
        average = [WeightAverage(h.ema_decay)] if h.ema_decay else []
        decay = [LearningRateDecay(h.lr_decay_from)] if h.lr_decay_from is not None else []
        compiled: list[pl.Callback] = []
        if h.compile:  # the file loads at setup, before the background child or the first batch compiles
            compiled += [CompileArtifacts(Path(h.compile_cache_file))] if h.compile_cache_file else []
            compiled.append(BackgroundCompile() if h.compile_in_background else CompileNotice())
        # In this order at each batch end: the average, the guard (which may stop training), the previews.
        return [*average, NonFiniteGuard(h.max_nonfinite_steps), Previews(h.preview_every_n_batches), RandomStates(),
                *decay, *compiled]

    def setup(self, stage: str) -> None:
        """Lightning hook: ``attach_data`` with the trainer's datamodule, on this rank's device."""
        # The module is not on its device yet during setup; the strategy knows this rank's GPU.
        self.attach_data(getattr(self.trainer, "datamodule", None), self.trainer.strategy.root_device)

    def attach_data(self, datamodule: TritonDataModule | None, device: torch.device) -> None:
        """Take from the data what the step needs (Lightning's ``setup`` calls it; scripts without a Trainer too).

        The background labels of ``val/psnr_masked``, the scene and states to render in the loop, and the real
        frames' robot views of ``robot_pairing`` and ``texture_pairing`` (turned off, with a warning, when the data
        has no real states).

        Args:
            datamodule: the training data, or None (no rendering, no robot pairing).
            device: where the renders go (a CUDA device: nvdiffrast; else embree, per ``render_backend``).
        """
        labels = datamodule.labels if datamodule is not None else None
        # val/psnr_masked scores objects and robot, as eval's psnr_masked: the table is background.
        self._background_labels = [labels.id_of("table")] if labels is not None and "table" in labels.names else []
        self._label_names = labels.names if labels is not None else ()
        self._validation_roles = datamodule.validation_roles() if datamodule is not None else []
        if self.loss_weights.get("label_colours") and labels is not None:
            self._label_colours = self._label_colour_targets(labels, device)
        rendered_sim = datamodule is not None and datamodule.sim_source == "render"
        paired_terms = [name for name in ("robot_pairing", "texture_pairing", "object_adversarial", "object_colours")
                        if self.loss_weights.get(name)]
        shared_hint = bool(self.hparams.get("shared_object_hint"))
        tracked = bool(self.hparams.get("tracked_objects"))
        drawn_objects = bool(self.model.shading_channels) and not self.hparams.get("shade_objects", True)
        real_states = datamodule is not None and datamodule.has_real_states
        if drawn_objects and not real_states:
            rank_zero_warn("system.shade_objects=false: every surface is shaded for this run, the moving objects too: "
                           "telling them from the robot and the table needs the real frames' robot states, which "
                           "plain folders have only with data.scene and data.real_states (data/README.md); set "
                           "system.shade_objects=true to silence this")
            drawn_objects = False
        if (paired_terms or shared_hint or tracked) and not real_states:
            settings = [f"loss.loss_weights {paired_terms}"] * bool(paired_terms)
            settings += ["system.shared_object_hint"] * shared_hint + ["system.tracked_objects"] * tracked
            rank_zero_warn(f"{' and '.join(settings)} off for this run: they need the real frames' robot states, "
                           "which plain folders have only with data.scene and data.real_states (the photos' logged "
                           "joints; data/README.md); turn them off to silence this")
            for name in paired_terms:
                self.loss_weights[name] = 0.0
            paired_terms, shared_hint = [], False
        if not (rendered_sim or paired_terms or shared_hint or drawn_objects) or datamodule is None:
            return
        from triton_s2r.render.rasterizer import make_rasterizer

        rasterizer = make_rasterizer(self.hparams.render_backend, device if device.type == "cuda" else None)
        if rendered_sim:
            self._render = (*datamodule.scene_and_states(), rasterizer)
        if paired_terms or shared_hint or drawn_objects:
            scene, states = datamodule.real_robot_states()
            views = RobotViews.from_states(scene, states, self.hparams.robot_pairing_labels, rasterizer,
                                           tracked=tracked)
            if shared_hint:
                self.model.sim_input.share_label_hint(views.object_ids)
            if drawn_objects:
                self.model.draw_labels(views.object_ids)
            if paired_terms:  # render the real frames' robot and static objects
                self._robot_views = views

    def on_fit_start(self) -> None:
        """Lightning hook: under DDP, average only the phase's gradients; check for SIGTERM every few batches."""
        ddp = self.trainer.strategy.model
        if isinstance(ddp, torch.nn.parallel.DistributedDataParallel):
            ddp.register_comm_hook(self._phase_gradients, PhaseGradients.hook)
            check_sigterm_every(self.trainer)

    # ------------------------------------------------------------------------------------ data

    def short_side(self) -> int:
        """Shorter image side of the current resolution stage (before jitter)."""
        return [s for b, s in self.schedule if b <= self.batches_trained][-1]

    def _short_side_tensor(self) -> Tensor:
        """``short_side()`` as a device tensor for logging, made once per stage.

        Lightning copies a logged Python number to the device at every call, and that copy waits for the GPU.
        """
        side = self.short_side()
        if side not in self._side_tensors:
            self._side_tensors[side] = torch.tensor(float(side), device=self.device)
        return self._side_tensors[side]

    def _jittered_short_side(self) -> int:
        return self.short_side() + int(torch.randint(0, int(self.short_side() * self.hparams.resize_jitter) + 1, ()))

    def _inputs(self, batch: dict[str, Tensor]) -> StepInputs:
        """The batch at the current stage: sim and real cropped independently.

        With ``robot_pairing`` or ``texture_pairing`` each photo's robot and static objects are rendered at the
        photo's crop.
        """
        uv, label, k = self._sim_batch(batch)
        crop, real = self.hparams.crop_size, batch["real"]
        height, width = real.shape[-2:]
        size, offsets = random_crop_windows(real.shape[0], height, width, self._jittered_short_side(), crop)
        robot = None
        if self._robot_views is not None:
            # The photos' indices: a list of ints from the datamodule's transfer hook, as the sim states'.
            view = self._robot_views.render(cast(list[int], batch["real_index"]), size, offsets, crop)
            robot = GBuffer(uv=view.uv.to(self.device), label=view.label.to(self.device))
        return StepInputs(uv, label, k, crop_photos(real, size, offsets, crop), robot)

    def _sim_batch(self, batch: dict[str, Tensor]) -> tuple[Tensor, Tensor, int]:
        """(uv, label, supersample) of the batch at the current stage: crops of frames, or rendered crops."""
        crop = self.hparams.crop_size
        if self._render is None:
            uv, label = augment_sim(batch["uv"], batch["label"], self._jittered_short_side(), crop)
            return uv, label, 1
        scene, states, rasterizer = self._render
        # The frame indices: a list of ints from the datamodule's transfer hook (no tensor for DDP to move).
        state = states.select(cast(list[int], batch["state"]))
        cam = state.camera
        size, offsets = random_crop_windows(state.batch_size, cam.height, cam.width, self._jittered_short_side(), crop)
        camera = cam.resized(*size).cropped(offsets[:, 0], offsets[:, 1], crop, crop)
        k = self.hparams.supersample
        g = rasterizer.render(scene, FrameState(state.object_poses, camera), supersample=k)
        return g.uv.to(self.device), g.label.to(self.device), k

    # ------------------------------------------------------------------------------------ step

    def training_step(self, batch: dict[str, Tensor], batch_idx: int) -> None:
        """One batch: a forward pass, the discriminator phase on it, then the generator phase."""
        opt_g, opt_d = self.optimizers()  # pyright: ignore[reportGeneralTypeIssues]  # a list: two optimizers
        if self._cuda_graphs:
            torch.compiler.cudagraph_mark_step_begin()  # the last step's graph outputs may now be overwritten
        out = self._forward(self._inputs(batch))
        loss_d, skipped_d = self._discriminator_phase(out, opt_d)
        terms, loss_g, skipped_g = self._generator_phase(out, opt_g)
        self.batches_trained += 1
        self.batches_done += 1
        for scheduler in self._schedulers():
            scheduler.step()
        # Not prog_bar=True: Lightning reads progress-bar metrics back at every batch, a wait for the GPU.
        # ``progress`` is shown by triton_s2r.train.ProgressBar, which reads it only when it refreshes.
        self.progress = {"loss_g": loss_g.detach(), "loss_d": loss_d.detach()}
        if logging_batch(self.trainer):
            logged = {**terms, **self.progress, **self.scores, **self.gradient_norms.metrics()}
            self.log_dict({f"train/{name}": value.detach() for name, value in logged.items()})
            self.log("train/resolution", self._short_side_tensor())
        losses = {name: value.detach() for name, value in {**terms, "discriminator": loss_d}.items()}
        self.last_step = StepResult(forward=out, losses=losses, skipped=skipped_d | skipped_g)

    def on_train_batch_end(self, outputs, batch, batch_idx: int) -> None:
        """Lightning hook: drop the step's result once the callbacks have read it."""
        self.last_step = None  # the callbacks (called before this hook) have read it; free the batch's tensors

    def _discriminator_phase(self, out: Forward, optimizer) -> tuple[Tensor, Tensor]:
        """D_A and D_B learn the photos and x_a against this pass's detached translations: (loss, skipped)."""
        loss_d = self._discriminator_loss(out)
        return loss_d, self._optimize(optimizer, loss_d, "d")

    def _generator_phase(self, out: Forward, optimizer) -> tuple[dict[str, Tensor], Tensor, Tensor]:
        """G and texture learn against the updated, frozen discriminators: (unweighted terms, loss, skipped)."""
        discriminators = self._discriminators()
        for d in discriminators:
            d.requires_grad_(False)  # the G step must not accumulate D gradients
        terms = self._generator_terms(out)
        for d in discriminators:
            d.requires_grad_(True)
        # A Tensor: a step needs at least one weighted term (typeshed's sum also allows its start value, 0).
        loss_g = cast(Tensor, sum(self.loss_weights[name] * value for name, value in terms.items()))
        return terms, loss_g, self._optimize(optimizer, loss_g, "g")

    @torch.no_grad()
    def validation_step(self, batch: dict[str, Tensor], batch_idx: int, dataloader_idx: int = 0) -> Tensor | None:
        """Score translations of the datamodule's validation frames, as ``triton-s2r eval`` scores them.

        The loaders' roles are the datamodule's ``validation_roles()``. ``"test"`` (paired test frames):
        ``val/psnr``, ``val/psnr_masked`` (objects and robot: no table, no void), ``val/psnr/<label>`` and
        ``val/colour_error/<label>`` (each label's pixels, in the frames that show it; the error of its mean colour
        as ``triton-s2r eval``'s ``colour_error_by_label``), ``val/ssim``, ``val/haarpsi``, ``val/photo_score`` (D_B's
        mean logit on these held-out photos, resized and centre-cropped as training shows its photos).
        ``"train_real"`` (paired frames of the photos training sees): the same under ``val/train_real/``.
        ``"sequence"`` (consecutive frames of a sequence, one batch): ``val/surface_consistency`` and
        ``val/warp_error``; returns the translated frames (T, 3, H, W) in [0, 1] (``TrainingCurves`` writes them as
        a video).
        """
        gbuffer = GBuffer(uv=batch["uv"], label=batch["label"])
        model = getattr(self, "model_ema", self.model)  # the weight average where kept: what Translator loads
        translation, real = to_unit(model(gbuffer.uv, gbuffer.label)), to_unit(batch["real"])
        role = self._validation_roles[dataloader_idx]
        prefix = "val/train_real/" if role == "train_real" else "val/"
        size = translation.shape[0]

        def log(name: str, value: Tensor) -> None:
            self.log(f"{prefix}{name}", value, batch_size=size, add_dataloader_idx=False)

        if role == "sequence":
            log("surface_consistency", metrics.surface_consistency(translation, gbuffer, self.model.num_labels))
            log("warp_error", metrics.warp_error(translation, gbuffer))
            return translation
        # D_B on these photos at the training photos' scale, beside train/photo_score (adversarial.mean_logit).
        photos = centre_crop_photos(batch["real"], self.short_side(), self.hparams.crop_size)
        log("photo_score", mean_logit(self._logits(self.discriminator_real, photos, eager=True)))
        log("psnr", metrics.psnr(translation, real))
        log("ssim", metrics.ssim(translation, real))
        log("haarpsi", metrics.haarpsi(translation, real))
        objects = metrics.object_mask(gbuffer.label, exclude=self._background_labels)
        if objects.any():
            keep = objects.flatten(1).any(1)
            log("psnr_masked", metrics.psnr(translation[keep], real[keep], mask=objects[keep]))
        # which surfaces a change of val/psnr comes from, and whether their colours drift (the void is not logged)
        num_labels = len(self._label_names)
        for measure, by_label in (("psnr", metrics.psnr_by_label(translation, real, gbuffer.label, num_labels)),
                                  ("colour_error",
                                   metrics.colour_error_by_label(translation, real, gbuffer.label, num_labels))):
            for name, value in zip(self._label_names, by_label[1:], strict=True):
                if not value.isnan():
                    log(f"{measure}/{name}", value)
        return None

    def on_validation_epoch_end(self) -> None:
        """Lightning hook: the gradient norms' peak and clipped count start the interval of curves.csv's next row."""
        self.gradient_norms.reset()

    def _forward(self, inputs: StepInputs) -> Forward:
        """Texture once, then both translations and the codes every loss needs.

        With robot pairing the photos' robot renders go through the same E_A and G_B calls as the sim batch, as one
        batch of 2B: the networks normalise each image on its own, so that changes no value, and each network runs
        once instead of twice. Likewise E_B takes the photos and, for the content and cycle terms, x_ab in one call.
        """
        m, robot, real = self.model, inputs.robot, inputs.real
        sample = m.sample_texture(inputs.uv, inputs.label, inputs.supersample)
        both = sample if robot is None else SimBatch.cat(sample, m.sample_texture(robot.uv, robot.label))
        x_a, projection = m.sim_image(both)
        c_a = m.generator_sim.encode(x_a)
        x_ab, x_ab_fixed_texture = m.decode_real(c_a, both)
        n = sample.uv.shape[0]  # the sim batch comes first in the networks' calls
        cycled = [x_ab_fixed_texture[:n]] if self.loss_weights["content"] or self.loss_weights["cycle"] else []
        c_b, *c_ab = together(m.generator_real.encode, [real, *cycled])
        out = Forward(uv=sample.uv, label=sample.label, x_a=x_a[:n], projection=projection[:n], real=real,
                      x_ab=x_ab[:n], x_ab_fixed_texture=x_ab_fixed_texture[:n], c_a=c_a[:n], c_b=c_b,
                      c_ab=c_ab[0] if c_ab else None,
                      x_ba=m.generator_sim.decode(c_b), robot_x_ab=None if robot is None else x_ab[n:],
                      robot_label=None if robot is None else robot.label,
                      robot_projection=None if robot is None else projection[n:])
        return self._with_object_crops(out) if self.loss_weights["object_adversarial"] else out

    def _with_object_crops(self, out: Forward) -> Forward:
        """``out`` with windows around an object in each translation and each photo (``training.object_crops``)."""
        views = self._robot_views
        assert views is not None  # with the weight
        window, size = self.object_window, self.hparams.object_crop_size
        sim_centres = draw_centres(sim_objectness(out.label, views.object_ids), window)
        photo_centres = draw_centres(self._photo_objectness(out), window)
        return replace(out, object_fake=crop_windows(out.x_ab, sim_centres, window, size),
                       object_real=crop_windows(out.real, photo_centres, window, size))

    def _photo_objectness(self, out: Forward) -> Tensor:
        """(B', H, W) where the photos' robot-and-table renders explain them least (``photo_objectness``)."""
        views = self._robot_views
        assert views is not None and out.robot_x_ab is not None and out.robot_label is not None  # with robot views
        # The texture explains the photos where the texture pairing fits it to them.
        explanations = [out.robot_x_ab, *([out.robot_projection] if self.loss_weights["texture_pairing"] else [])]
        return photo_objectness(out.real, explanations, out.robot_label, views.static_ids)

    def _discriminator_loss(self, out: Forward) -> Tensor:
        """LSGAN/hinge D loss on the detached translations of this batch's forward pass, plus R1 if ``r1_gamma``."""
        assert out.x_ba is not None  # set by _forward (PairedSystem has its own discriminator loss)
        loss = (self._discriminator_term(self.discriminator_real, out.real, out.x_ab)
                + self._discriminator_term(self.discriminator_sim, out.x_a, out.x_ba))
        if not self.loss_weights["object_adversarial"]:  # also where attach_data turned it off: no real states
            return loss
        assert self.discriminator_object is not None and out.object_real is not None  # drawn with the weight
        assert out.object_fake is not None
        return loss + self._discriminator_term(self.discriminator_object, out.object_real, out.object_fake,
                                               "object_adversarial")

    def _discriminator_term(self, discriminator: MultiScaleDiscriminator, real: Tensor, fake: Tensor,
                            term: str = "adversarial") -> Tensor:
        """One discriminator's loss on ``real`` against ``fake`` (both detached here), plus its R1 penalty.

        The loss is weighted as the generator's ``term``. R1 is added at every ``loss.r1_interval``-th batch,
        weighted by that interval (lazy regularisation).
        """
        interval = self.losses.r1_interval
        gamma = self.losses.r1_gamma * interval if self.batches_trained % interval == 0 else 0.0
        # Discriminators run under autocast; their logits are cast to fp32 for the loss (_logits). R1 differentiates
        # D twice, which a compiled network cannot: it takes an eager forward of the real images, a leaf that
        # requires grad. With CUDA graphs and lazy R1 the adversarial term still takes the compiled forward, so that
        # an R1 batch replays the graphs of the other batches (when it skipped that call, each R1 batch cost about
        # 1.5 s, docs/benchmarks.md); otherwise (eager, or R1 at every batch) the R1 forward serves both.
        real, fake = real.detach(), fake.detach()

        def adversarial(real_logits: list[Tensor], fake_logits: list[Tensor]) -> Tensor:
            if discriminator is not self.discriminator_object:  # D_B or D_A
                real_name, fake_name = (("photo_score", "translation_score") if discriminator is self.discriminator_real
                                        else ("render_score", "real_to_sim_score"))
                self.scores[real_name] = mean_logit(real_logits).detach()
                self.scores[fake_name] = mean_logit(fake_logits).detach()
            return self.loss_weights[term] * discriminator_adversarial_loss(
                real_logits, fake_logits, self.losses.gan_type)

        if not gamma:
            return adversarial(*self._logits_of_both(discriminator, real, fake))
        r1_real = real.detach().requires_grad_(True)  # a leaf of its own: a compiled call of ``real`` sees none
        r1_logits = self._logits(discriminator, r1_real, eager=True)
        if self._cuda_graphs and interval > 1:
            logits = self._logits_of_both(discriminator, real, fake)
        else:
            logits = r1_logits, self._logits(discriminator, fake)
        return adversarial(*logits) + gamma / 2 * r1_penalty(r1_logits, r1_real)

    def _robot_pairing(self, out: Forward) -> Tensor:
        """L1 between the photos and the translation of their robot's render, a mean over the robot's pixels.

        With ``robot_pairing_void``, plus a mean over the pixels the render leaves void (the backdrop).
        """
        views, label = self._robot_views, out.robot_label
        assert views is not None and label is not None and out.robot_x_ab is not None  # with the term's weight
        # The ids live on the renders' device: with nvdiffrast that is the step's, so nothing is copied or waited for.
        robot = torch.isin(label, views.label_ids.to(label.device))
        with torch.autocast(self.device.type, enabled=False):
            x_ab, real = out.robot_x_ab.float(), out.real.float()
            loss = reconstruction_loss(x_ab, real, "l1", mask=robot)
            if self.hparams.robot_pairing_void:  # a mean of its own, so the robot's pixels keep their weight
                loss = loss + reconstruction_loss(x_ab, real, "l1", mask=label == VOID)
            return loss

    def _texture_pairing(self, out: Forward) -> Tensor:
        """L1 between the photos and the texture projection π of their render, over every rendered surface.

        The render holds the robot and the static objects (the table), so their textures learn the photos' colours
        directly; only the texture gets this gradient (π depends on nothing else). docs/method.md §4.8.
        """
        assert out.robot_projection is not None and out.robot_label is not None  # with the term's weight
        with torch.autocast(self.device.type, enabled=False):
            return reconstruction_loss(out.robot_projection[:, :3].float(), out.real.float(), "l1",
                                       mask=out.robot_label != VOID)

    def _label_colour_targets(self, labels: LabelTable, device: torch.device) -> tuple[Tensor, Tensor]:
        """``loss.label_colours`` as (K+1, 3) targets in [0, 1] and a (K+1,) mask, by label id (void: none).

        Raises:
            ValueError: a name that is not one of the data's labels.
        """
        ids = labels.num_labels + 1
        targets, has_target = torch.zeros(ids, 3), torch.zeros(ids, dtype=torch.bool)
        for name, colour in self.losses.label_colours.items():
            if name not in labels.names:
                raise ValueError(f"loss.label_colours names {name!r}, which is not a label of the data; its labels are "
                                 f"{list(labels.names)}: name one of them or drop the entry")
            targets[labels.id_of(name)], has_target[labels.id_of(name)] = torch.tensor(colour), True
        return targets.to(device), has_target.to(device)

    def _object_colours(self, out: Forward) -> Tensor:
        """Sliced Wasserstein distance of the translated objects' colours to the photos' unexplained pixels' colours.

        The photos' pixels are the fraction of their static surfaces that their renders explain least
        (``photo_objectness``), the fraction being the objects' share of the sim crops. docs/method.md §4.10.
        """
        views = self._robot_views
        assert views is not None  # with the weight
        objects = sim_objectness(out.label, views.object_ids) > 0
        unexplained = top_fraction(self._photo_objectness(out), objects.float().mean())
        directions = torch.nn.functional.normalize(torch.randn(OBJECT_COLOUR_DIRECTIONS, 3, device=out.real.device),
                                                   dim=1)
        with torch.autocast(self.device.type, enabled=False):
            return colour_distribution_loss(out.x_ab.float(), objects, out.real.float(), unexplained, directions)

    def _optimize(self, optimizer, loss: Tensor, phase: str) -> Tensor:
        """Backward and optimizer step of ``phase`` (``d`` or ``g``), skipped on the device when ``loss`` is not finite.

        Returns:
            0-dim bool tensor, True when the step was skipped. Nothing here waits for the GPU.
        """
        skipped = ~torch.isfinite(loss.detach())
        optimizer.zero_grad(set_to_none=True)
        self._phase_gradients.select(p for group in optimizer.param_groups for p in group["params"])
        self.manual_backward(loss)
        self._clip(optimizer, phase)
        # Fused Adam leaves weights, moments and step count untouched where found_inf is 1. No public API skips a
        # step on a device flag: this is the attribute GradScaler.step sets for optimizers with fused kernels.
        optimizer.optimizer.found_inf = skipped.float()
        optimizer.step()
        return skipped

    def _generator_terms(self, out: Forward) -> dict[str, Tensor]:
        """Unweighted generator + texture terms under their paper names (terms with weight 0 skipped)."""
        s, m, w = self.losses, self.model, self.loss_weights
        surface_losses_on = self.batches_trained >= s.surface_losses_from
        sim_range = 2.0 * max(1.0, m.sim_input.hint_multiplier + m.sim_input.texture_multiplier)
        x_a, real, x_ab, x_ba = out.x_a, out.real, out.x_ab, out.x_ba
        assert x_ba is not None and out.c_a is not None and out.c_b is not None  # set by _forward (not PairedSystem's)

        def omegas(prediction: Tensor, target: Tensor, parts: int, data_range: float,
                   criterion: str = s.criterion) -> Tensor:
            """(parts,) Ω of each of ``parts`` equal slices of the batch, in one call."""
            with torch.autocast(self.device.type, enabled=False):  # MS-SSIM's filters in fp32
                return self._reconstruction_losses(prediction.float(), target.float(), parts, criterion, data_range)

        terms: dict[str, Tensor] = {}
        if w["adversarial"]:
            terms["adversarial"] = (
                generator_adversarial_loss(self._logits(self.discriminator_real, x_ab), s.gan_type)
                + generator_adversarial_loss(self._logits(self.discriminator_sim, x_ba), s.gan_type)
            )
        target_a = x_a.detach() if s.detach_sim_targets else x_a  # the target side of recon and cycle
        codes_a, codes_b = ([out.c_a], [out.c_b]) if w["reconstruction"] else ([], [])  # G_A's and G_B's inputs
        if w["content"] or w["cycle"]:
            assert out.c_ab is not None  # _forward encodes x_ab with these weights
            c_ab, c_ba = out.c_ab, m.generator_sim.encode(x_ba)
            if w["content"]:
                terms["content"] = omegas(torch.cat((c_ab, c_ba)), torch.cat((out.c_a, out.c_b)), 2, 1.0,
                                          s.content_criterion).sum()
            if w["cycle"]:
                codes_a.append(c_ab)
                codes_b.append(c_ba)
        if codes_a:
            # Each decoder takes the reconstruction's and the cycle's codes in one call (a batch of 2B), and Ω
            # compares both with their common target in one call: [reconstruction, cycle] or either alone.
            parts = len(codes_a)
            omega_a = omegas(m.generator_sim.decode(torch.cat(codes_a)), target_a.repeat(parts, 1, 1, 1), parts,
                             sim_range)
            omega_b = omegas(m.generator_real.decode(torch.cat(codes_b)), real.repeat(parts, 1, 1, 1), parts, 2.0)
            if w["reconstruction"]:
                terms["reconstruction"] = omega_a[0] + omega_b[0]
            if w["cycle"]:
                terms["cycle"] = omega_a[-1] + omega_b[-1]
        if w["object_adversarial"]:
            assert self.discriminator_object is not None and out.object_fake is not None  # with the weight
            terms["object_adversarial"] = generator_adversarial_loss(
                self._logits(self.discriminator_object, out.object_fake), s.gan_type)
        if w["robot_pairing"]:
            terms["robot_pairing"] = self._robot_pairing(out)
        if w["texture_pairing"]:
            terms["texture_pairing"] = self._texture_pairing(out)
        if w["object_colours"]:
            terms["object_colours"] = self._object_colours(out)
        if w["label_colours"]:
            assert self._label_colours is not None, "attach_data sets the label colours"
            with torch.autocast(self.device.type, enabled=False):  # x_ab in [-1, 1], the colours in [0, 1]
                terms["label_colours"] = label_colour_loss(x_ab.float() * 0.5 + 0.5, out.label, *self._label_colours)
        with torch.autocast(self.device.type, enabled=False):
            if w["surface_consistency"] and surface_losses_on:
                terms["surface_consistency"] = surface_consistency_loss(
                    out.x_ab_fixed_texture.float(), out.uv, out.label, m.num_labels, s.surface_grid_size,
                    color_normalization_eps=s.surface_color_normalization_eps, sim_clip_frames=s.sim_clip_frames,
                    blur_sigma=s.surface_blur_sigma)
            if w["surface_chroma_consistency"] and surface_losses_on:
                terms["surface_chroma_consistency"] = surface_chroma_consistency_loss(
                    out.x_ab_fixed_texture.float(), out.uv, out.label, m.num_labels, s.surface_grid_size,
                    s.surface_blur_sigma)
            if w["texture_reality"] and surface_losses_on:
                target = texture_reality_target(out.projection.float(), x_a.float(), s.texture_reality_target)
                data_range = 2.0 if s.texture_reality_target == "projection" else sim_range
                # Not on shaded pixels: there x_ab is the texture itself, times G_B's gain.
                label = out.label.where(~m.shaded(out.label), 0) if m.shading_channels else out.label
                terms["texture_reality"] = self._texture_reality_loss(
                    x_ab.float(), target, label, s.criterion, data_range, s.texture_reality_trains)
        return terms

    def _logits(self, discriminator: MultiScaleDiscriminator, image: Tensor, eager: bool = False) -> list[Tensor]:
        """Patch logits (fp32) of ``image``, augmented by ``discriminator_augment`` with a fresh draw per call.

        The image goes in as fp32 (photos are fp32, translations bf16 under autocast), so a compiled
        discriminator sees one dtype. ``eager``: bypass ``system.compile`` (its compiled pieces run their Python code).
        """
        with torch.compiler.set_stance("force_eager") if eager else contextlib.nullcontext():
            return [logit.float() for logit in discriminator(diff_augment(image.float(), self.discriminator_augment))]

    def _logits_of_both(self, discriminator: MultiScaleDiscriminator, real: Tensor,
                        fake: Tensor) -> tuple[list[Tensor], list[Tensor]]:
        """``_logits`` of ``real`` (B, C, H, W) and of ``fake`` (B', C, H, W) from one call: half the launches of two.

        The discriminators normalise nothing across a batch, so the logits are those of separate calls.
        """
        logits = self._logits(discriminator, torch.cat((real.float(), fake.float())))
        return [logit[:real.shape[0]] for logit in logits], [logit[real.shape[0]:] for logit in logits]

    def _discriminators(self) -> list[MultiScaleDiscriminator]:
        """D_A, D_B and, with ``object_adversarial``, D_O."""
        extra = [] if self.discriminator_object is None else [self.discriminator_object]
        return [self.discriminator_sim, self.discriminator_real, *extra]

    def _clip(self, optimizer, phase: str) -> None:
        """Clip ``phase``'s gradients as the settings ask; record their norm from before for the logs."""
        relative = self._relative_clips.get(phase)
        gradients = [p.grad for group in optimizer.param_groups for p in group["params"] if p.grad is not None]
        if relative is not None:
            self.gradient_norms.add(phase, *relative(gradients))
        else:
            self.gradient_norms.add(phase, torch.nn.utils.get_total_norm(gradients))
        if self.hparams.gradient_clip_val:
            self.clip_gradients(optimizer, gradient_clip_val=self.hparams.gradient_clip_val,
                                gradient_clip_algorithm="norm")

    def _schedulers(self) -> list:
        schedulers = self.lr_schedulers()
        return [] if schedulers is None else list(schedulers) if isinstance(schedulers, list) else [schedulers]

    def on_load_checkpoint(self, checkpoint: dict) -> None:
        """Lightning hook: restore the batch count from the checkpoint's ``batches_done`` buffer."""
        self.batches_trained = int(checkpoint["state_dict"]["batches_done"])  # RNG states: RandomStates


def together(network: Callable[[Tensor], Tensor], inputs: list[Tensor]) -> list[Tensor]:
    """``network`` of each input in one call on their concatenation: (B_i, C, H, W) -> (B_i, C', H', W').

    The networks normalise each image on its own, so the outputs are those of separate calls.
    """
    if not inputs:
        return []
    return list(network(torch.cat(inputs)).split([x.shape[0] for x in inputs]))
