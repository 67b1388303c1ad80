"""Import guards for optional dependencies: fail loudly, naming the extra that provides them."""

from __future__ import annotations

import importlib
from types import ModuleType


def require(module: str, *, extra: str, package: str | None = None) -> ModuleType:
    """Import ``module`` or raise an ImportError that says how to install it.

    Args:
        module: importable module name, e.g. ``"xatlas"``.
        extra: the triton_s2r extra that installs it, e.g. ``"unwrap"``.
        package: PyPI name when it differs from the module name.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(
            f"{module!r} is needed here but is not installed: pip install 'triton_s2r[{extra}]' "
            f"(or pip install {package or module})"
        ) from exc
