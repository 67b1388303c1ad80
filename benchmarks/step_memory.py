"""What autograd keeps for the backward pass of one generator step, by network and by tensor.

The generator and texture step's forward pass (every loss term, the surface losses included) runs once under
bf16 autocast on this machine's device (a CUDA GPU if there is one, else the CPU) with hooks that record each
distinct storage saved for the backward pass and the network running when it was saved. These tensors stay
alive until the backward pass reaches them, so they set most of a step's peak activation memory. The recipe is
the shipped one, compiled as it trains (``system.compile=true``: the tensors are those the compiled graphs keep,
on the CPU as on a GPU, since the partition between forward and backward is made before code generation);
``system.compile=false`` gives the eager step's. "Padded copies" are saved tensors whose two last sides are the
crop's side divided by a power of two plus 2 to 6: the convolutions' reflection-padded inputs.

Usage (from the repository root)::

    python -m benchmarks.step_memory --data DIR                        # the shipped recipe (experiment=paper)
    python -m benchmarks.step_memory --data DIR --batch 4 --no-write model.translator.texture.recompute=false
    python -m benchmarks.step_memory --data DIR --activation-budgets 1 0.5    # AOTAutograd's memory budget, a row each

Writes the table into this machine's "step-memory:" section of docs/benchmarks.md (unless --no-write).
"""

from __future__ import annotations

import argparse
import collections
from dataclasses import dataclass

import pytorch_lightning as pl
import torch

from benchmarks.report import machine, write_section
from benchmarks.train import fit_one_epoch, step_overrides

#: Rows of the largest saved tensors shown.
LARGEST = 12


@dataclass(frozen=True)
class Saved:
    """One storage autograd saved: its bytes, the network (module path) running then, the tensor's shape."""

    nbytes: int
    network: str
    shape: tuple[int, ...]


class _Counted(Exception):
    """Ends training once the census has run (Lightning tears down, then re-raises it)."""


class _Census(pl.Callback):
    """Runs the census on the first training batch (on the device, after Lightning's set-up), then ends training."""

    def __init__(self) -> None:
        self.saved: list[Saved] = []
        self.crop = 0  # the system's crop side, read with the census

    def on_train_batch_start(self, trainer: pl.Trainer, pl_module, batch, batch_idx: int) -> None:
        self.saved = kept_in_generator_step(pl_module, batch)
        self.crop = pl_module.hparams["crop_size"]
        raise _Counted


def kept_in_generator_step(system, batch: dict) -> list[Saved]:
    """Each distinct storage that the generator step's forward pass saves for the backward pass."""
    names = {module: name for name, module in system.named_modules()}
    running = ["(losses)"]
    handles = []
    for module in system.modules():
        handles.append(module.register_forward_pre_hook(lambda m, args: running.append(names[m])))
        handles.append(module.register_forward_hook(lambda m, args, out: running.pop() and None))
    saved: dict[int, Saved] = {}

    def keep(tensor: torch.Tensor) -> torch.Tensor:
        storage = tensor.untyped_storage()
        saved.setdefault(storage.data_ptr(), Saved(storage.nbytes(), running[-1], tuple(tensor.shape)))
        return tensor

    try:
        with (torch.autocast(system.device.type, dtype=torch.bfloat16),
              torch.autograd.graph.saved_tensors_hooks(keep, lambda tensor: tensor)):
            system._generator_terms(system._forward(system._inputs(batch)))
    finally:
        for handle in handles:
            handle.remove()
    return list(saved.values())


def network_of(module_path: str) -> str:
    """The network a module path belongs to: ``model.generator_sim.decoder.layers.3`` -> ``generator_sim.decoder``."""
    parts = module_path.split(".")
    return ".".join(parts[1:3]) if parts[0] == "model" else parts[0]


def is_padded(shape: tuple[int, ...], crop: int) -> bool:
    """A 4-D tensor whose two last sides are crop / 2^k + 2p (p in 1..3): a reflection-padded convolution input."""
    sides = {crop // 2**k + 2 * p for k in range(crop.bit_length()) if crop % 2**k == 0 and crop // 2**k > 4
             for p in (1, 2, 3)}
    return len(shape) == 4 and shape[-1] in sides and shape[-2] in sides


def census(data: str, batch: int, extra: tuple[str, ...]) -> tuple[list[Saved], int]:
    """The saved storages of one generator step, and its crop side.

    The shipped recipe on ``data`` at batch ``batch`` with the Hydra overrides ``extra`` added last.
    """
    overrides = [*step_overrides(data, batch), "data.num_workers=0", *extra]
    callback = _Census()
    try:
        fit_one_epoch(overrides, callback, "/tmp/bench_step_memory", "bf16-mixed")
    except _Counted:
        pass
    return callback.saved, callback.crop


def kept_and_padded(saved: list[Saved], crop: int) -> tuple[int, int]:
    """Bytes of all the saved storages, and of the padded copies among them."""
    return sum(s.nbytes for s in saved), sum(s.nbytes for s in saved if is_padded(s.shape, crop))


def table(saved: list[Saved], crop: int) -> str:
    """Markdown: MiB per network, the padded copies, the largest tensors."""
    mib = 2**20
    total, padded = kept_and_padded(saved, crop)
    by_network: collections.Counter[str] = collections.Counter()
    for s in saved:
        by_network[network_of(s.network)] += s.nbytes
    lines = [f"Kept for the backward pass: **{total / mib:,.0f} MiB** in {len(saved)} storages, of which padded "
             f"copies {padded / mib:,.0f} MiB ({padded / max(total, 1):.0%}).", "",
             "| network | MiB | share |", "|---|---:|---:|"]
    lines += [f"| {name} | {n / mib:,.1f} | {n / max(total, 1):.0%} |" for name, n in by_network.most_common()]
    lines += ["", "| largest saved tensors | shape | MiB |", "|---|---|---:|"]
    lines += [f"| {s.network} | {'x'.join(map(str, s.shape))} | {s.nbytes / mib:,.1f} |"
              for s in sorted(saved, key=lambda s: -s.nbytes)[:LARGEST]]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True, help="benchmark dataset folder (states, assets, train_real)")
    parser.add_argument("--batch", type=int, default=4, help="batch size (a multiple of data.sim_clip_frames)")
    parser.add_argument("--activation-budgets", type=float, nargs="+", default=[0.5], metavar="B",
                        help="compiled: a census per system.activation_memory_budget (below 1 the partitioner "
                        "recomputes activations in the backward pass to keep at most about B of them)")
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("overrides", nargs="*", help="Hydra overrides added last")
    args = parser.parse_args()
    censuses = []
    for budget in args.activation_budgets:
        censuses.append(census(args.data, args.batch, (f"system.activation_memory_budget={budget}", *args.overrides)))
    crop = censuses[0][1]
    rows = ["| activation memory budget | kept MiB | padded copies MiB |", "|---:|---:|---:|"]
    for budget, (saved, _) in zip(args.activation_budgets, censuses, strict=True):
        kept, padded = kept_and_padded(saved, crop)
        rows.append(f"| {budget} | {kept / 2**20:,.0f} | {padded / 2**20:,.0f} |")
    text = (f"The generator step of the shipped recipe (`experiment=paper`, every loss term), batch {args.batch}, "
            f"{crop}x{crop} crops, bf16 autocast; overrides: {' '.join(args.overrides) or 'none'}.\n\n"
            + "\n".join(rows) + f"\n\nAt budget {args.activation_budgets[0]}:\n\n" + table(censuses[0][0], crop))
    if not args.no_write:
        write_section(f"step-memory:{machine()}", f"Generator step memory: {machine()}", text)
    print(text)


if __name__ == "__main__":
    main()
