# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 03 · Translate a sequence
#
# Translation is stateless: every frame goes through the translator on its own, and a surface point looks the
# same in every frame because it samples the same learned texture. This notebook translates a video sequence
# of the benchmark, plays it next to the ground truth, and measures how close it gets.
# `TRITON_TINY=1` uses the tiny run (CI); otherwise the demo's run. Both are trained if missing.

# %%
import os
from pathlib import Path

import numpy as np
import torch
from IPython.display import Video
from PIL import Image

from triton_s2r.demo import prepare_run
from triton_s2r.evaluation.metrics import object_mask, psnr
from triton_s2r.inference.sequences import open_input, translate_source
from triton_s2r.inference.translator import Translator

TINY = os.environ.get("TRITON_TINY") == "1"  # CI: tiny benchmark and networks, about a minute on a CPU
OUTPUTS = Path(os.environ.get("TRITON_OUTPUTS", "../outputs"))  # the repository's outputs/ (gitignored)
data_root, run_dir = prepare_run(OUTPUTS, preset="tiny" if TINY else "small", experiment="tiny" if TINY else "demo")

# %% [markdown]
# ## The input
# `open_input` accepts what `triton-s2r translate` accepts: a dataset root (here: its first sequence), a
# sequence folder, a folder of UVL frames, or a `states.npz` rendered on the fly.

# %%
translator = Translator.from_run_dir(run_dir)
source = open_input(data_root, translator)
print(source.description, "| paired real frames:", source.real is not None)

# %% [markdown]
# ## Write the side-by-side video
# Panels: UVL | texture projection | translation | real. The same as
# `triton-s2r translate RUN DATA --out OUT.mp4 --side-by-side`.

# %%
result = translate_source(translator, source, OUTPUTS / "videos" / f"{run_dir.name}_notebook.mp4",
                          side_by_side=True, batch_size=8, progress=False)
print(result.num_frames, "frames,", result.frame_size, result.panels, f"{result.seconds:.1f} s")
Video(str(result.out), embed=True, html_attributes="controls loop autoplay")

# %% [markdown]
# ## Compare with the ground truth
# The benchmark's real frames are pixel-aligned with the sim frames, so fidelity is measurable: PSNR over the
# whole image and over the objects and robot only (no table, no void), per frame.

# %%
index = list(range(len(source)))
gbuffer = source.gbuffer(index)
real = source.real_frames(index, (gbuffer.height, gbuffer.width))
translation = torch.cat([translator(gbuffer[i:i + 8]).translation.cpu() for i in range(0, len(index), 8)])
objects = object_mask(gbuffer.label, exclude=[translator.labels.id_of("table")])
print("PSNR (dB), whole image:", np.round(psnr(translation, real, reduction="none").numpy(), 1))
print("PSNR (dB), objects only:", np.round(psnr(translation, real, mask=objects, reduction="none").numpy(), 1))

# %% [markdown]
# ## Stateless and deterministic
# Translating a frame alone or inside a batch, now or later, gives the same image.

# %%
again = translator(gbuffer[3]).translation.cpu()
print("frame 3 alone vs in its batch, max difference:", float((again - translation[3:4]).abs().max()))
print("bit-identical on a second call:", torch.equal(again, translator(gbuffer[3]).translation.cpu()))
Image.fromarray((torch.cat([translation[3], real[3]], 2).permute(1, 2, 0).numpy() * 255).round().astype(np.uint8))
