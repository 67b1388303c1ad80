"""DDP gradient averaging for the two GAN phases: only the stepped optimizer's gradients cross the wire.

A training batch runs two backward passes (discriminators, then generators and texture), and DDP
(``find_unused_parameters``) averages every parameter's gradient at each of them: the other phase's networks
send buckets of zeros, half of the traffic. ``PhaseGradients`` is a DDP communication hook
(``DistributedDataParallel.register_comm_hook``) that averages a bucket only when it holds a parameter of the
optimizer about to step and hands the others back unchanged. Those are never read: each phase's optimizer clears
its own gradients before its backward pass. docs/training.md, "Several GPUs and nodes".
"""

# No ``from __future__ import annotations``: DDP checks the hook's annotations as objects, not strings.
from collections.abc import Iterable

import torch
import torch.distributed as dist
from torch import Tensor
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks


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
