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
# # 02 · Learned textures
#
# TRITON learns one neural texture per label, a small Fourier-feature MLP of (u, v). This notebook loads a
# trained run, bakes every label's texture to an image, writes them onto the scene's meshes (OBJ and glTF,
# for a simulator or a viewer), and shows how the texture projection feeds the translator.
# `TRITON_TINY=1` uses the tiny run (CI); otherwise the demo's run. Both are trained if missing.

# %%
import os
from pathlib import Path

import numpy as np
import trimesh
from PIL import Image

from triton_s2r.data.datasets import BenchmarkDataset
from triton_s2r.demo import prepare_run
from triton_s2r.inference.export import export_textures, texture_image
from triton_s2r.inference.translator import Translator

TINY = os.environ.get("TRITON_TINY") == "1"  # CI: tiny benchmark and networks, about a minute on a CPU
OUTPUTS = Path(os.environ.get("TRITON_OUTPUTS", "../outputs"))  # the repository's outputs/ (gitignored)
data_root, run_dir = prepare_run(OUTPUTS, preset="tiny" if TINY else "small", experiment="tiny" if TINY else "demo")

# %% [markdown]
# ## Load the run
# `Translator.from_run_dir` rebuilds the model from the run's `config.yaml` and loads the last checkpoint.

# %%
translator = Translator.from_run_dir(run_dir)
print(f"run {run_dir.name} on {translator.device}: {translator.num_labels} labels {list(translator.labels.names)}")
print(translator.model.texture)

# %% [markdown]
# ## Bake every label's texture
# `bake_textures(R)` evaluates the MLPs on an R x R raster with rows following u and columns following v;
# `texture_image` turns that into an ordinary image (u to the right, v up), the layout OBJ and glTF expect.

# %%
baked = translator.bake_textures(128).cpu()
print(tuple(baked.shape), f"range [{float(baked.min()):.2f}, {float(baked.max()):.2f}]")
tiles = [texture_image(t) for t in baked]
Image.fromarray(np.concatenate(tiles, axis=1))

# %% [markdown]
# ## Export onto the meshes
# The same as `triton-s2r export-textures RUN --out DIR`: PNGs, one OBJ and one GLB per object, and the
# whole scene as one GLB posed like the first test frame.

# %%
result = export_textures(translator, OUTPUTS / "textures" / run_dir.name, resolution=256)
print(len(result.textures), "textures,", len(result.obj), "OBJ,", len(result.glb), "GLB ->", result.scene_glb)
scene = trimesh.load(result.scene_glb)
print(f"scene.glb: {len(scene.geometry)} meshes, extent {np.round(scene.extents, 2)} m (y up)")

# %% [markdown]
# ## From texture to translation
# For one test frame: the UVL buffer, the texture sampled at each pixel's UV (the *texture projection*, which
# is part of the translator's input), the translation, and the real frame it should resemble.

# %%
frames = BenchmarkDataset.open(data_root).uvl_frames("test")
output = translator(frames[0])
real = BenchmarkDataset.open(data_root).photos("test")[0]
strip = [output.texture[0].cpu(), output.translation[0].cpu(), real]
Image.fromarray(np.concatenate([(t.permute(1, 2, 0).numpy() * 255).round().astype(np.uint8) for t in strip], 1))
