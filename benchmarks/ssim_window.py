"""Milliseconds of the training step's seven MS-SSIM terms, forward and backward, per Gaussian window and grouping.

``losses.reconstruction.gaussian_window`` applies SSIM's 11x11 Gaussian window either as torchmetrics' depthwise
convolution or as two banded matrix products. This times Ω (L1 + MS-SSIM) at the shapes of one default training step
(batch 4, 256x256 crops, a 32-channel content code): the two x_a terms (6 channels), the three photo terms
(reconstruction, cycle, ℓTR) and the two content-code terms, on the device given; each term in a call of its own
(``separate``, the step before 2026-12-06) or as the step makes them (``in slices``: each pair of terms of one shape
in one ``reconstruction_losses`` call, four calls).

Usage (from the repository root)::

    python -m benchmarks.ssim_window --device cuda --repeats 50

Prints a markdown table (copy it into docs/benchmarks.md with the card, the command and the date).
"""

from __future__ import annotations

import argparse
import time
from functools import partial

import torch

from benchmarks.report import machine
from triton_s2r.losses import reconstruction

# (terms, channels, side, data range) of the MS-SSIM terms of one default step (batch 4, 256 px crops): the step
# compares each group's terms in one call
STEP_TERMS = ((2, 6, 256, 4.0), (2, 3, 256, 2.0), (1, 3, 256, 2.0), (2, 32, 64, 1.0))


def step_terms_ms(device: torch.device, banded: bool, in_slices: bool, batch: int, repeats: int) -> float:
    """Mean milliseconds of the seven terms' forward and backward (window ``banded`` or not, calls ``in_slices``)."""
    generator = torch.Generator(device=device).manual_seed(0)
    groups = [(torch.rand(n * batch, c, s, s, device=device, generator=generator, requires_grad=True),
               torch.rand(n * batch, c, s, s, device=device, generator=generator), n, r) for n, c, s, r in STEP_TERMS]
    calls = groups if in_slices else [(x_i, y_i, 1, r) for x, y, n, r in groups
                                      for x_i, y_i in zip(x.chunk(n), y.chunk(n), strict=True)]
    window = reconstruction.gaussian_window
    reconstruction.gaussian_window = partial(window, banded=banded)
    try:
        def once() -> None:
            total = sum(reconstruction.reconstruction_losses(x, y, n, data_range=r).sum() for x, y, n, r in calls)
            total.backward()  # pyright: ignore[reportAttributeAccessIssue]  # a Tensor: the terms are tensors

        for _ in range(3):
            once()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        start = time.perf_counter()
        for _ in range(repeats):
            once()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        return (time.perf_counter() - start) / repeats * 1e3
    finally:
        reconstruction.gaussian_window = window


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    device = torch.device(args.device)
    print(f"{machine()}, torch {torch.__version__}, batch {args.batch}, {args.repeats} repeats")
    print("| window | calls | ms per step (7 terms, forward + backward) |\n|---|---|---|")
    for name, banded in (("convolution", False), ("banded products", True), ("convolution again", False)):
        for calls, in_slices in (("separate (7)", False), ("in slices (4)", True)):
            ms = step_terms_ms(device, banded, in_slices, args.batch, args.repeats)
            print(f"| {name} | {calls} | {ms:.2f} |", flush=True)


if __name__ == "__main__":
    main()
