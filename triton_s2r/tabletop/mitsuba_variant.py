"""Which Mitsuba 3 variant renders the benchmark's "real" frames, and importing Mitsuba switched to it.

Variant, in order: the ``variant`` argument; the ``TRITON_MITSUBA_VARIANT`` environment variable; else (or when
either says ``auto``) the fastest that renders here: ``cuda_ad_rgb`` on an NVIDIA GPU, then ``llvm_ad_rgb`` where a
libLLVM >= 19 is installed, then ``scalar_rgb``. ``real.RealRenderer`` loads its scene once and passes each frame's
values as opaque inputs, so a JIT variant compiles its kernels once, for the first frame (speeds in
docs/benchmarks.md, "Dataset build"). ``llvm_ad_rgb`` needs a libLLVM >= 19 (Debian 12: ``apt install libllvm19``);
drjit 1.5 aborts inside its JIT with an older one ("Cannot select: fminimum"), hence the version floor and the probe
of ``variant_works``. The variant changes the Monte Carlo noise (each has its own random streams), so images are
reproducible for a given variant only (``make-dataset`` records it in ``dataset.yaml``); ``tests/test_real_render.py``
checks that the JIT variants agree with ``scalar_rgb`` up to that noise wherever they run.
"""

from __future__ import annotations

import functools
import glob
import os
import re
import shutil
import subprocess
import sys
from types import ModuleType

from triton_s2r.utils.optional import require

VARIANT_ENV = "TRITON_MITSUBA_VARIANT"
CUDA_VARIANT = "cuda_ad_rgb"
LLVM_VARIANT = "llvm_ad_rgb"
FALLBACK_VARIANT = "scalar_rgb"
AUTO = "auto"
#: What each JIT variant needs besides Mitsuba (``variant_works`` checks it before probing).
PREREQUISITES = {CUDA_VARIANT: "an NVIDIA GPU and driver",
                 LLVM_VARIANT: "a libLLVM >= 19 (or DRJIT_LIBLLVM_PATH naming one)"}

# A child process renders one tiny image with a variant; exit code 0 means that variant works. (Mitsuba 3.9
# renders nothing without an integrator: "No integrator specified!")
_PROBE = (
    "import sys, mitsuba as mi; mi.set_variant(sys.argv[1]); "
    "s = mi.load_dict({'type': 'scene', 'integrator': {'type': 'path'}, 'shape': {'type': 'sphere'}, "
    "'light': {'type': 'constant'}, "
    "'sensor': {'type': 'perspective', 'film': {'type': 'hdrfilm', 'width': 4, 'height': 4}}}); "
    "mi.render(s, spp=1).numpy()"
)


def select_variant(variant: str | None = None) -> str:
    """The Mitsuba variant to render with (see the module docstring for the order of choices)."""
    chosen = variant or os.environ.get(VARIANT_ENV) or AUTO
    if chosen != AUTO:
        return chosen
    return next((name for name in (CUDA_VARIANT, LLVM_VARIANT) if variant_works(name)), FALLBACK_VARIANT)


@functools.cache
def variant_works(name: str) -> bool:
    """Whether Mitsuba variant ``name`` renders here.

    Its prerequisite (``PREREQUISITES``) must be present and a tiny render must succeed in a child process.
    """
    if name == CUDA_VARIANT and not (os.path.exists("/dev/nvidia0") or shutil.which("nvidia-smi")):
        return False
    # Without libLLVM >= 19 drjit would load an older one and abort, so don't even probe.
    if name == LLVM_VARIANT and not (os.environ.get("DRJIT_LIBLLVM_PATH") or _has_libllvm(min_major=19)):
        return False
    try:
        probe = subprocess.run([sys.executable, "-c", _PROBE, name], capture_output=True, timeout=300, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return probe.returncode == 0


def _has_libllvm(min_major: int) -> bool:
    """Whether a shared libLLVM of at least ``min_major`` is installed in a standard library folder."""
    # Fixed folders, not a recursive glob: /usr/lib holds symlink loops that make ``**`` run forever.
    folders = ["/usr/lib", "/usr/lib64", "/usr/local/lib", "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
               *glob.glob("/usr/lib/llvm-*/lib"), "/opt/homebrew/opt/llvm/lib", "/usr/local/opt/llvm/lib"]
    for folder in folders:
        for path in glob.glob(os.path.join(folder, "libLLVM*")):
            match = re.search(r"libLLVM[-.](?:so\.)?(\d+)", os.path.basename(path))
            if match and int(match.group(1)) >= min_major:
                return True
    return False


def load_mitsuba(variant: str | None) -> ModuleType:
    """Import Mitsuba and switch it to the selected variant.

    Raises:
        RuntimeError: a JIT variant was asked for that does not render here (``variant_works``): switching to it
            could abort this process (drjit with an old libLLVM).
    """
    mi = require("mitsuba", extra="scenes")
    name = select_variant(variant)
    if mi.variant() != name:
        if name in PREREQUISITES and not variant_works(name):
            raise RuntimeError(f"Mitsuba variant {name} (the variant argument or {VARIANT_ENV}) does not render "
                               f"here; it needs {PREREQUISITES[name]}. Unset {VARIANT_ENV} (or set it to {AUTO}) "
                               f"to render with the fastest variant that works here.")
        mi.set_variant(name)
    return mi

