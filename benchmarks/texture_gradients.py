"""What trains the texture: each generator term's gradient on the texture, at a run's checkpoint.

Without the shaded output the texture learns from every term that reads x_a, not from ℓTR alone; with it, from the
terms that compare its shaded pixels (docs/method.md §4.6). Over a few
training batches, drawn and cropped as training draws them, this sums each weighted term's gradient on the
texture's parameters and prints its norm and its cosine with ℓTR's (the term that asks the texture to look like
the translation), then the same for the sum of all terms: the direction the texture actually moves in. Hydra
overrides change the loss settings before the gradients are taken (the weights stay the checkpoint's), e.g.
``loss.detach_sim_targets=true`` shows how much of a term's pull comes from x_a as its target.

Usage (from the repository root; the run's dataset must be where its config says)::

    python -m benchmarks.texture_gradients RUN
    python -m benchmarks.texture_gradients RUN --batches 16 loss.detach_sim_targets=true
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch
from omegaconf import OmegaConf
from torch import Tensor

from triton_s2r.runs.run_dir import EMA_PREFIX, RunDir, load_checkpoint
from triton_s2r.train import build

#: The term whose direction the others are compared with.
REFERENCE = "texture_reality"


def texture_gradients(run: str | Path, batches: int = 8, overrides: tuple[str, ...] = (),
                      checkpoint: str | None = None, seed: int = 0) -> dict[str, Tensor]:
    """Each weighted generator term's gradient on the texture's parameters, summed over ``batches`` batches.

    Args:
        run: a run directory.
        batches: training batches to sum over (drawn with ``seed``).
        overrides: dotlist overrides of the run's config (``key=value``), applied before the system is built.
        checkpoint: the run's checkpoint to load (None: ``last.ckpt``); its trained weights, not the average.
        seed: seeds the batches, crops and the networks' input noise.

    Returns:
        term name -> (P,) float32, the flattened gradient (zeros for a term that does not reach the texture).
    """
    run_dir = RunDir.open(run)
    cfg = run_dir.config()
    OmegaConf.set_struct(cfg, True)  # a misspelt key is an error, not a new key nothing reads
    cfg.merge_with_dotlist([*overrides, "data.num_workers=0"])
    datamodule, system = build(cfg)
    system.attach_data(datamodule, torch.device("cpu"))  # what Lightning's setup would do: rendering, robot views
    state = load_checkpoint(run_dir.checkpoint(checkpoint))["state_dict"]
    system.load_state_dict({k: v for k, v in state.items() if not k.startswith(EMA_PREFIX)})
    system.batches_trained = int(state["batches_done"])  # the surface terms' warm-up, as when training resumes
    parameters = list(system.model.texture.parameters())
    weights = system.loss_weights
    torch.manual_seed(seed)
    sums: dict[str, Tensor] = {}
    loader = iter(datamodule.train_dataloader())
    for _ in range(batches):
        out = system._forward(system._inputs(next(loader)))
        for name, value in system._generator_terms(out).items():
            grads = torch.autograd.grad(weights[name] * value, parameters, retain_graph=True, allow_unused=True)
            flat = torch.cat([(g if g is not None else torch.zeros_like(p)).flatten()
                              for g, p in zip(grads, parameters, strict=True)])
            sums[name] = sums.get(name, torch.zeros_like(flat)) + flat.detach()
    return sums


def table(sums: dict[str, Tensor], batches: int) -> str:
    """Markdown: per term and for all terms, the mean gradient's norm and its cosine with ℓTR's."""
    reference = sums.get(REFERENCE)

    def row(name: str, grad: Tensor) -> str:
        norm = float(grad.norm()) / batches
        if reference is None or norm == 0 or float(reference.norm()) == 0:
            cosine = "n/a"
        else:
            cosine = f"{float(torch.nn.functional.cosine_similarity(grad, reference, dim=0)):.3f}"
        return f"| {name} | {norm:.3e} | {cosine} |"

    lines = ["| term | gradient norm on the texture | cosine with ℓTR's |", "|---|---|---|"]
    lines += [row(name, grad) for name, grad in sums.items()]
    lines.append(row("all terms", torch.stack(list(sums.values())).sum(0)))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description="Each generator term's gradient on the texture at a run's "
                                     "checkpoint, and its cosine with ℓTR's (docs/method.md §4.6).")
    parser.add_argument("run", help="run directory")
    parser.add_argument("overrides", nargs="*", help="config overrides (key=value) applied before the gradients")
    parser.add_argument("--batches", type=int, default=8, help="training batches to sum over")
    parser.add_argument("--checkpoint", default=None, help="checkpoint of the run (default: last)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_intermixed_args()
    sums = texture_gradients(args.run, args.batches, tuple(args.overrides), args.checkpoint, args.seed)
    if REFERENCE not in sums:
        print("ℓTR is not among the run's terms at this checkpoint (weight 0 or before the surface losses' "
              "warm-up): no cosine")
    print(table(sums, args.batches))


if __name__ == "__main__":
    main()
