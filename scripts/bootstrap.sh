#!/usr/bin/env bash
# Create or reuse the project's virtual environment (.venv) and install triton_s2r into it.
# Idempotent: reinstalls only when pyproject.toml changed. Used by `make demo` and `make test`.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
VENV=.venv

if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 10))' \
    || { echo "triton_s2r needs Python >= 3.10 (found $("$PYTHON" --version)); set PYTHON=..." >&2; exit 1; }
  echo "creating virtual environment in $VENV"
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --upgrade pip
fi

stamp="$VENV/.triton_s2r-installed"
want=$(cat pyproject.toml scripts/bootstrap.sh | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  if ! "$VENV/bin/python" -c 'import torch' 2>/dev/null; then
    if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi >/dev/null 2>&1; then
      echo "installing torch (CUDA build)"
      "$VENV/bin/python" -m pip install -q torch
    else
      # No GPU: the CPU wheel (a local file on our development and CI machines).
      echo "installing torch==2.13.0 (CPU)"
      "$VENV/bin/python" -m pip install -q torch==2.13.0
    fi
  fi
  extras="dev,scenes"
  if command -v nvcc >/dev/null 2>&1 && "$VENV/bin/python" -c 'import torch,sys; sys.exit(not torch.cuda.is_available())'; then
    extras="dev,scenes,gpu"
  fi
  echo "installing triton_s2r[$extras] (editable)"
  "$VENV/bin/python" -m pip install -q -e ".[$extras]"
  echo "$want" > "$stamp"
fi
