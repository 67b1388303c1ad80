"""DDP for the two GAN phases (triton_s2r/training/ddp.py): the strategy, the communication hook and the SIGTERM check.

The two-process runs (test_training.py on gloo CPU processes, slow tier; test_training_gpu.py on two GPUs) check
that the ranks end with equal weights; this checks which buckets the hook sends.
"""

from __future__ import annotations

import inspect
from types import SimpleNamespace

import pytorch_lightning as pl
import torch
from hydra import compose, initialize_config_module
from hydra.utils import instantiate
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

from triton_s2r.training.ddp import DDPStrategy, PhaseGradients, check_sigterm_every


def test_trainer_ddp_wraps_the_model_on_the_training_stream() -> None:
    with initialize_config_module("triton_s2r.conf", version_base="1.3"):
        cfg = compose("train", overrides=["trainer=ddp"])
    strategy = instantiate(cfg.trainer.strategy)
    assert isinstance(strategy, DDPStrategy) and strategy._ddp_kwargs == {"find_unused_parameters": True}
    # The override replaces the method that Lightning calls to wrap the model (a private one, hence this guard).
    assert "self._setup_model(" in inspect.getsource(pl.strategies.DDPStrategy.configure_ddp)


class _Bucket:
    """What the hook reads of a ``torch.distributed.GradBucket``: its parameters and its flat gradient buffer."""

    def __init__(self, *parameters: torch.Tensor) -> None:
        self._parameters = list(parameters)
        self._buffer = torch.cat([torch.full((p.numel(),), float(i + 1)) for i, p in enumerate(parameters)])

    def parameters(self) -> list[torch.Tensor]:
        return self._parameters

    def buffer(self) -> torch.Tensor:
        return self._buffer


def test_only_buckets_of_the_stepped_optimizer_are_averaged(monkeypatch) -> None:
    generator, discriminator = torch.nn.Linear(2, 2), torch.nn.Linear(3, 1)
    sent = []

    def allreduce(group, bucket):
        sent.append(bucket)
        done = torch.futures.Future()
        done.set_result(bucket.buffer() / 2)  # what two ranks of equal gradients would not give: marks the average
        return done

    monkeypatch.setattr(default_hooks, "allreduce_hook", allreduce)
    phase = PhaseGradients()
    g_only, d_only = _Bucket(*generator.parameters()), _Bucket(*discriminator.parameters())
    mixed = _Bucket(generator.bias, discriminator.weight)  # DDP's buckets may straddle two networks

    phase.select(discriminator.parameters())  # the discriminator phase
    kept = phase.hook(g_only).wait()
    assert sent == [] and kept is g_only.buffer()  # handed back untouched: no traffic
    torch.testing.assert_close(phase.hook(d_only).wait(), d_only.buffer() / 2)
    torch.testing.assert_close(phase.hook(mixed).wait(), mixed.buffer() / 2)
    assert sent == [d_only, mixed]

    phase.select(generator.parameters())  # the generator phase
    assert phase.hook(d_only).wait() is d_only.buffer() and sent == [d_only, mixed]
    phase.hook(g_only)
    assert sent[-1] is g_only


def test_sigterm_is_shared_every_few_batches_not_at_each() -> None:
    """Lightning's per-batch SIGTERM broadcast (a wait for the GPU) runs at batches 0, n, 2n, ... on every rank."""
    checked = []

    class _Loop:
        batch = 0

        def _broadcast_sigterm_tensor(self) -> None:  # Lightning's name: the method check_sigterm_every thins out
            checked.append(self.batch)

    loop = _Loop()
    trainer = SimpleNamespace(fit_loop=SimpleNamespace(epoch_loop=loop))
    for _ in range(2):  # a second fit on the same trainer: still every 20th batch, not every 400th
        check_sigterm_every(trainer, batches=20)  # pyright: ignore[reportArgumentType]  # what it reads of a Trainer
    for loop.batch in range(45):
        loop._broadcast_sigterm_tensor()  # what the epoch loop calls before each batch
    assert checked == [0, 20, 40]


def test_lightning_still_has_the_per_batch_sigterm_broadcast() -> None:
    """check_sigterm_every thins out a private Lightning method; fail loudly when an upgrade renames or drops it."""
    from pytorch_lightning.loops.training_epoch_loop import _TrainingEpochLoop

    assert callable(getattr(_TrainingEpochLoop, "_broadcast_sigterm_tensor", None))
