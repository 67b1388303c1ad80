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
# # 04 · Bring your own robot
#
# From a robot description (URDF), a trajectory logged by any simulator and a camera to the UVL frames that
# training and translation read. The example in `examples/xarm/`: the xArm 6 of `pybullet_data`, a table, a
# cube and a can, 12 frames (README section "Bring your own robot"; file formats in `data/README.md`).

# %%
import os
from pathlib import Path

import numpy as np
from PIL import Image

from triton_s2r.render import load_scene
from triton_s2r.render.render_sim import render_sim
from triton_s2r.render.sim_states import read_states
from triton_s2r.render.uvl import read_uvl

EXAMPLE = Path("../examples/xarm").resolve()
OUTPUTS = Path(os.environ.get("TRITON_OUTPUTS", "../outputs")).resolve()

# %% [markdown]
# The scene file names the robot's URDF and groups its links into labels (each label gets one learned
# texture); each link gets its own UV tile. The trajectory holds joint angles by joint name and object poses
# by object name, one row per frame.

# %%
scene = load_scene(EXAMPLE / "scene.yaml")
states = read_states(EXAMPLE / "trajectory.csv")
print(f"{scene.num_objects} objects (robot links included), {scene.labels.num_labels} labels")
for label_id, name in enumerate(scene.labels.names, start=1):
    print(f"  label {label_id} {name:<12}", ", ".join(o.name for o in scene.objects if o.label == label_id))
print(f"{len(states.joints)} frames; joints {list(states.joint_names)}")

# %% [markdown]
# `render_sim` (the `triton-s2r render-sim` command) renders every frame to a UVL file and writes
# `states.npz` and `labels.yaml` beside them. Embree on the CPU, nvdiffrast on a GPU (`backend="auto"`).

# %%
result = render_sim(EXAMPLE / "scene.yaml", EXAMPLE / "trajectory.csv", OUTPUTS / "xarm", size=(96, 128),
                    backend="auto")
print(result.num_frames, "frames of", result.size, "with", result.backend)
print(result.train_command(photos="MY_PHOTOS"))

# %% [markdown]
# Four of the frames as UVL pictures (red = u, green = v, blue = label value; void is black).

# %%
frames = [read_uvl(OUTPUTS / "xarm" / "uvl" / f"{i:06d}.png") for i in (0, 4, 8, 11)]
strip = np.concatenate([(np.asarray(f.permute(1, 2, 0)) * 255).round().astype(np.uint8) for f in frames], axis=1)
Image.fromarray(strip)
