r"""FLOPs of one training step by network: where the step's arithmetic goes, for the shipped recipe and variants.

A step cannot run faster than its FLOPs over the card's rate; this counts them on any machine, the CPU included,
with ``torch.utils.flop_counter`` (convolutions and matrix products, forward and backward; element-wise work is not
counted). The step is the shipped recipe's as ``benchmarks.train`` times it (``step_overrides``: batch 4, 256 px
crops, every loss term from the first batch), both phases (the discriminators', then the generators' and the
texture's), with the renderer in the loop (Embree on the CPU, nvdiffrast on a GPU), at a batch without the lazy R1
penalty, in fp32 (the counts do not depend on the precision). ``--variant NAME OVERRIDE ...`` adds a row with Hydra
overrides.

Usage (from the repository root)::

    python -m benchmarks.step_flops --data outputs/data/m256 \
        --variant narrow model.translator.generator_sim.base_channels=16 \
            model.translator.generator_sim.num_res_blocks=2 model.translator.generator_sim.content_channels=8

Writes its table to docs/benchmarks.md (``--no-write``: print only).
"""

from __future__ import annotations

import argparse

import pytorch_lightning as pl
import torch
from torch.utils.flop_counter import FlopCounterMode

from benchmarks.report import write_section
from benchmarks.train import fit_one_epoch, step_overrides

COUNTED_BATCH = 1  # batch 0 carries the lazy R1 penalty (every 16th batch)
NETWORKS = {"ContentEncoder": "encoders", "Decoder": "decoders", "NeuralTexture": "texture",
            "MultiScaleDiscriminator": "discriminators"}


class CountOneBatch(pl.Callback):
    """Counts the FLOPs of training batch ``COUNTED_BATCH``: all of them, and each network's forward passes.

    A network's backward runs outside its forward call, interleaved with the others' (torch's module tracker can
    count a backward under two networks), so the networks' shares are of their forward passes.
    """

    def __init__(self) -> None:
        self.counter = FlopCounterMode(display=False)
        self.forward = dict.fromkeys(NETWORKS.values(), 0.0)
        self._open: list[FlopCounterMode] = []  # one per network call in progress (entering a counter clears it)
        self._hooks: list = []

    def _enter(self, *_) -> None:
        self._open.append(FlopCounterMode(display=False).__enter__())

    def _exit(self, module: torch.nn.Module, *_) -> None:
        mode = self._open.pop()
        mode.__exit__(None, None, None)
        self.forward[NETWORKS[type(module).__name__]] += mode.get_total_flops()

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx: int) -> None:
        if batch_idx != COUNTED_BATCH:
            return
        for module in pl_module.modules():
            if type(module).__name__ in NETWORKS:
                self._hooks += [module.register_forward_pre_hook(self._enter),
                                module.register_forward_hook(self._exit)]
        self.counter.__enter__()

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx: int) -> None:
        if batch_idx == COUNTED_BATCH:
            self.counter.__exit__(None, None, None)
            for hook in self._hooks:
                hook.remove()


def count_step(data: str, extra: list[str]) -> dict[str, float]:
    """FLOPs of one training step of the shipped recipe with ``extra`` overrides.

    ``total``: the whole step, forward and backward; per network (``NETWORKS``' labels): its forward passes in the
    step (E_A and E_B count together, as do G_A and G_B, and the discriminators).
    """
    overrides = [*step_overrides(data, 4), f"data.steps_per_epoch={COUNTED_BATCH + 1}", "data.num_workers=0",
                 "system.compile=false", *([] if torch.cuda.is_available() else ["render=embree"]), *extra]
    counting = CountOneBatch()
    fit_one_epoch(overrides, counting, "/tmp/bench_step_flops")
    return {"total": float(counting.counter.get_total_flops()), **counting.forward}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True, help="benchmark dataset folder (256 px for the recipe's crops)")
    parser.add_argument("--variant", nargs="+", action="append", default=[], metavar=("NAME", "OVERRIDE"),
                        help="a row for NAME: the step with these Hydra overrides (repeatable)")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    rows = [("shipped recipe", [])] + [(name, list(overrides)) for name, *overrides in args.variant]
    lines = ["| variant | step, TFLOP | " + " | ".join(f"{c}, forward" for c in NETWORKS.values()) + " |",
             "|---" * (len(NETWORKS) + 2) + "|"]
    for name, overrides in rows:
        counts = count_step(args.data, overrides)
        forward = sum(counts[c] for c in NETWORKS.values())
        cells = [f"{counts[c] / 1e12:.2f} ({counts[c] / forward:.0%})" for c in NETWORKS.values()]
        lines.append(f"| {name} | {counts['total'] / 1e12:.2f} | " + " | ".join(cells) + " |")
        print(lines[-1], flush=True)
    table = "\n".join(lines) + ("\n\nOne training step at a batch without R1, both phases, counted by "
                                "`torch.utils.flop_counter` (convolutions and matrix products): the whole step forward "
                                "and backward, then each network's forward passes in it (TFLOP, and their share of the "
                                "networks' forward FLOPs).")
    if not args.no_write:
        write_section("step-flops", "Training step: FLOPs by network (census)", table)


if __name__ == "__main__":
    main()
