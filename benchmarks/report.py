"""Shared helpers for benchmark scripts: machine description and docs/benchmarks.md sections."""

from __future__ import annotations

import datetime
import os
import platform
import re
import shlex
import subprocess
import sys
from pathlib import Path

import torch

DOC = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"


def machine() -> str:
    """'<GPU name>' or '<CPU model>, N cores' of the machine running the benchmark."""
    if torch.cuda.is_available():
        return torch.cuda.get_device_name()
    model = platform.processor() or "CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{model}, {len(os.sched_getaffinity(0))} cores"


def commit() -> str:
    """Short commit hash (``GIT_COMMIT`` overrides it where the checkout has no .git, e.g. the GPU machine)."""
    if os.environ.get("GIT_COMMIT"):
        return os.environ["GIT_COMMIT"]
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=DOC.parent, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def write_section(key: str, title: str, table: str, doc: Path = DOC) -> str:
    """Replace (or append) the section ``key`` of ``doc`` with a table stamped with card, command and date."""
    script = Path(sys.argv[0])
    module = f"-m benchmarks.{script.stem}" if script.parent.name == "benchmarks" else str(script)
    command = " ".join(["python", module, *map(shlex.quote, sys.argv[1:])])
    body = (
        f"<!-- {key} -->\n### {title}\n\n"
        f"- card: {machine()}\n- command: `{command}`\n"
        f"- date: {datetime.date.today().isoformat()}, commit {commit()}, torch {torch.__version__}\n\n"
        f"{table.strip()}\n<!-- /{key} -->\n"
    )
    doc.parent.mkdir(parents=True, exist_ok=True)
    header = "# Benchmarks\n\nNumbers below come from the scripts in `benchmarks/`.\n"
    text = doc.read_text() if doc.exists() else header
    pattern = re.compile(rf"<!-- {re.escape(key)} -->.*?<!-- /{re.escape(key)} -->\n", re.S)
    text = pattern.sub(lambda _: body, text) if pattern.search(text) else text.rstrip("\n") + "\n\n" + body
    doc.write_text(text)
    return body
