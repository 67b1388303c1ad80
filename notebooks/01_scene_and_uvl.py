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
# # 01 · The scene and its UVL buffers
#
# What the translator sees: the benchmark's baked scene (a Franka Panda, a table and five objects, one
# label each), rendered into G-buffers of per-pixel **u, v and label** (the "UVL" images of TRITON).
# Set `TRITON_TINY=1` for the CI-sized dataset; otherwise the demo's `small` benchmark is used. Either is
# built into `outputs/data/` if missing.

# %%
import os
from pathlib import Path

import numpy as np
from PIL import Image

from triton_s2r.data.datasets import BenchmarkDataset
from triton_s2r.demo import ensure_dataset
from triton_s2r.render import load_scene, make_rasterizer
from triton_s2r.render.preview import preview_image

TINY = os.environ.get("TRITON_TINY") == "1"  # CI: the tiny benchmark (64 px), built in seconds
OUTPUTS = Path(os.environ.get("TRITON_OUTPUTS", "../outputs"))  # the repository's outputs/ (gitignored)
PRESET = "tiny" if TINY else "small"
data_root = ensure_dataset(OUTPUTS.resolve() / "data" / PRESET, PRESET)

# %% [markdown]
# The dataset folder: a manifest, the baked scene (meshes with UVs), and per split the scene states,
# the UVL frames and the paired "real" frames (path traced with appearance the model never sees).

# %%
dataset = BenchmarkDataset.open(data_root)
scene = load_scene(data_root / dataset.manifest["scene"])
print(f"{dataset.manifest['name']}: {dataset.resolution[0]}x{dataset.resolution[1]} px")
print({split: info["frames"] for split, info in dataset.splits.items()})
print(f"{scene.num_objects} objects, {scene.num_triangles} triangles")
for label_id, name in enumerate(scene.labels.names, start=1):
    print(f"  label {label_id} {name:<11} value {scene.labels.values[label_id - 1]:>3}:",
          ", ".join(o.name for o in scene.objects if o.label == label_id))

# %% [markdown]
# ## Rendering states into G-buffers
# `make_rasterizer("auto")` picks nvdiffrast on a GPU and Embree ray casting on the CPU; both return the same
# `GBuffer` (uv, label, depth, triangle id). Here: the first four test states.

# %%
rasterizer = make_rasterizer("auto")
states = dataset.states("test").select([0, 1, 2, 3])
gbuffer = rasterizer.render(scene, states)
print(rasterizer.name, "uv", tuple(gbuffer.uv.shape), "label", tuple(gbuffer.label.shape))
print("fraction of void pixels:", round(float((~gbuffer.mask).float().mean()), 3))

# %% [markdown]
# The usual UVL picture (red = u, green = v, blue = label / K; void is black), then u, v and the labels
# separately (labels in random colours).

# %%
palette = np.random.default_rng(0).integers(40, 256, (scene.labels.num_labels + 1, 3)).astype(np.uint8)
palette[0] = 0  # void
u, v = (np.round(gbuffer.uv[:, c].numpy() * 255).astype(np.uint8) for c in (0, 1))
rows = [preview_image(gbuffer, scene.labels.num_labels), np.stack([u] * 3, -1), np.stack([v] * 3, -1),
        palette[gbuffer.label.numpy()]]
Image.fromarray(np.concatenate([np.concatenate(list(r), axis=1) for r in rows], axis=0))

# %% [markdown]
# ## Stored UVL files and paired real frames
# The dataset's UVL files (16-bit PNG, reference TRITON layout R = u, G = v, B = label value / 255) decode to
# the same G-buffer the renderer produces; each has a pixel-aligned real frame.

# %%
stored = dataset.uvl_frames("test")[0]
print("labels identical to the fresh render:", bool((stored.label == gbuffer.label[:1]).all()))
print("largest UV difference:", float((stored.uv - gbuffer.uv[:1]).abs().max()))
real = (dataset.photos("test")[0].permute(1, 2, 0).numpy() * 255).round().astype(np.uint8)
Image.fromarray(np.concatenate([preview_image(stored, scene.labels.num_labels)[0], real], axis=1))

# %% [markdown]
# ## Supersampling
# UVs are never blended at object edges; antialiasing renders k times larger and averages the *texture*
# later. A 2x G-buffer of the same state:

# %%
supersampled = rasterizer.render(scene, states.select([0]), supersample=2)
print(tuple(supersampled.uv.shape))
Image.fromarray(preview_image(supersampled, scene.labels.num_labels)[0])
