"""DDP for the two GAN phases: only the stepped optimizer's gradients cross the wire, and no wait at every batch.

A training batch runs two backward passes (discriminators, then generators and texture), and DDP
(``find_unused_parameters``) averages every parameter's gradient at each of them: the other phase's networks
send buckets of zeros, half of the traffic. ``PhaseGradients`` is a DDP communication hook
(``DistributedDataParallel.register_comm_hook``) that averages a bucket only when it holds a parameter of the
optimizer about to step and hands the others back unchanged. Those are never read: each phase's optimizer clears
its own gradients before its backward pass. ``check_sigterm_every`` keeps Lightning from making the host wait
for the GPU at every batch. ``DDPStrategy`` builds DDP on the stream that trains. docs/training.md, "Several GPUs
and nodes".
"""

# No ``from __future__ import annotations``: DDP checks the hook's annotations as objects, not strings.
import itertools
from collections.abc import Iterable

import pytorch_lightning as pl
import torch
import torch.distributed as dist
from pytorch_lightning import strategies
from torch import Tensor
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel


class DDPStrategy(strategies.DDPStrategy):
    """Lightning's DDP strategy, with the model wrapped on the current CUDA stream (the one training runs on).

    Lightning 2.6 builds ``DistributedDataParallel`` under a new side stream. DDP keeps the gradient accumulators of
    every parameter, made there, so each backward pass then hands every gradient from the training stream to that
    side stream (PyTorch warns: "The AccumulateGrad node's stream does not match the stream of the node that
    produced the incoming gradient"; Lightning issue #21567, still so in 2.6.6). The side stream only matters for
    capturing a whole step in one CUDA graph, which training does not do.
    """

    def _setup_model(self, model: torch.nn.Module) -> DistributedDataParallel:
        return DistributedDataParallel(module=model, device_ids=self.determine_ddp_device_ids(), **self._ddp_kwargs)


class PhaseGradients:
    """Which parameters the next backward pass must average across ranks (``select``) and the hook that does it."""

    def __init__(self) -> None:
        self.active: frozenset[int] = frozenset()  # ids of the parameters whose averaged gradients will be used

    def select(self, parameters: Iterable[Tensor]) -> None:
        """Average only these parameters' buckets in the next backward passes (the optimizer about to step)."""
        self.active = frozenset(id(p) for p in parameters)

    def hook(self, bucket: dist.GradBucket) -> torch.futures.Future[Tensor]:  # pyright: ignore[reportPrivateImportUsage]
        """DDP comm hook (registered as ``register_comm_hook(state, PhaseGradients.hook)``, state = this object)."""
        if any(id(p) in self.active for p in bucket.parameters()):
            return default_hooks.allreduce_hook(None, bucket)  # pyright: ignore[reportArgumentType]  # None: the default group
        skipped: torch.futures.Future[Tensor] = torch.futures.Future()
        skipped.set_result(bucket.buffer())
        return skipped


SIGTERM_CHECK_EVERY = 20  # batches: at most a few seconds of training between checks


def check_sigterm_every(trainer: pl.Trainer, batches: int = SIGTERM_CHECK_EVERY) -> None:
    """Let Lightning share rank 0's SIGTERM flag every ``batches`` batches instead of at every batch.

    Lightning 2.6 broadcasts the flag from rank 0 before each training batch and reads it back with ``.item()``
    (``_broadcast_sigterm_tensor`` of its training epoch loop), which makes the host wait for the GPU once per batch:
    the host can no longer queue the next step while the GPU runs this one (Lightning issue #21487). Every rank
    counts the same batches, so they still check together, and a SIGTERM still stops all of them, a few seconds
    later. A Lightning without that method is left alone.
    """
    loop = trainer.fit_loop.epoch_loop
    # From the class, so that a second fit on the same trainer replaces the thinned check rather than thinning it again.
    check = getattr(type(loop), "_broadcast_sigterm_tensor", None)
    if check is None:
        return
    calls = itertools.count()

    def every_few_batches() -> None:
        if next(calls) % batches == 0:
            check(loop)

    loop._broadcast_sigterm_tensor = every_few_batches
