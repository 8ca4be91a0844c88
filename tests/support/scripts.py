"""Loading the project's scripts (examples/, benchmarks/, docs/, a patch's ``patch.py``) in
tests by file path.

They are not packages, so tests import them from their files.  A module is registered in
``sys.modules`` while it executes because dataclasses look their module up there; it
stays registered only when asked (``keep``), for scripts that import each other by name.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

from .run import REPO


def load_script(relative: str, name: str, *, keep: bool = False) -> ModuleType:
    """Execute ``REPO/relative`` as module ``name`` and return it."""
    spec = importlib.util.spec_from_file_location(name, REPO / relative)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        if not keep:
            del sys.modules[name]
    return module
