"""The engine in the test's own process: the ``seam`` fixture (a pytest plugin).

A test writes patch folders (:meth:`Seam.patch`), builds a real engine over them and the
built-in catalog as a process would (:meth:`Seam.engine`), and imports a fake target
through it (:meth:`Seam.imported`: the loader's events around the module's body, see
:mod:`sglang_shims.testing.inprocess`).  At the end of the test every applied patch is
reverted and ``sys.modules`` is given back; an internal error the engine swallowed
fails the test.  What needs a fresh interpreter -- the ``.pth`` line, our finder among
the others on ``sys.meta_path``, fork, ``atexit``, threads -- stays in ``tests/process``.

Loaded as a plugin by ``tests/conftest.py``; no test collects this module.
"""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from sglang_shims.catalog import load
from sglang_shims.engine.core import Engine
from sglang_shims.testing import inprocess
from sglang_shims.testing.inprocess import fire, logged

from .packages import manifest_text, write_patch

__all__ = ["Seam", "fire", "logged"]


class Seam:
    """Patch folders, engines and fake target modules of one test."""

    def __init__(self, tmp: Path, isolation: inprocess.Isolation) -> None:
        self.tmp = tmp
        self.patches = tmp / "patches"
        self.isolation = isolation
        self._made = 0

    def patch(self, patch_id: str, target: str, code: str | None = None,
              manifest: str | None = None, **fields: str) -> Path:
        """Write ``patches/<patch_id>`` (``manifest_text(patch_id, target, **fields)``
        unless ``manifest`` is given); returns the patches folder."""
        text = manifest if manifest is not None else manifest_text(patch_id, target, **fields)
        return write_patch(self.patches, patch_id, text, code)

    def engine(self, environ: Mapping[str, str] | None = None,
               versions: Mapping[str, str | None] | None = None, *, builtin: bool = True,
               gpus: list[tuple[int, int]] | None = None, path: str | None = None) -> Engine:
        """An engine over the built-in patches and the test's folder (as
        ``SGLANG_SHIMS_PATH``, or ``path``), with the toggles of ``environ`` only."""
        extra = path if path is not None else str(self.patches) if self.patches.exists() else None
        catalog = load.load(extra, include_builtin=builtin)
        # another engine is another process: patch code runs afresh (not the first one's)
        for key in [k for k in sys.modules if k.startswith(inprocess.PATCH_CODE)]:
            del sys.modules[key]
        return self.isolation.track(inprocess.build(catalog, environ, versions, gpus))

    def module(self, name: str, source: str = "VALUE = 1\n") -> ModuleType:
        """A fresh module ``name`` with ``source`` as its body, not yet run; its
        ``sys.modules`` entry is given back at the end of the test."""
        self._made += 1
        self.isolation.claim(name)
        return inprocess.target_module(name, textwrap.dedent(source),
                                       self.tmp / f"site-{self._made}")

    def imported(self, engine: Engine, name: str, source: str = "VALUE = 1\n") -> ModuleType:
        """``import name`` through ``engine``: a fresh module with ``source`` as its body,
        the loader's events around it; raises what the import would raise."""
        return self.execute(engine, self.module(name, source))

    def execute(self, engine: Engine, module: ModuleType) -> ModuleType:
        """Import a module made by :meth:`module` through ``engine`` (set what its body
        needs on it first)."""
        return inprocess.execute(engine, module)

    def imported_stock(self, name: str, source: str = "VALUE = 1\n") -> ModuleType:
        """``import name`` around the shims (before they were installed, or by a loader
        that skips our hook): the body run, the module in ``sys.modules``, no event sent."""
        module = self.module(name, source)
        inprocess.run_body(module)
        sys.modules[name] = module
        return module

    def status(self, engine: Engine, patch_id: str) -> dict[str, Any]:
        """The patch's ``status()`` entry, as plain data."""
        return engine.status()[patch_id]


@pytest.fixture
def seam(tmp_path: Path) -> Iterator[Seam]:
    isolation = inprocess.Isolation()
    yield Seam(tmp_path, isolation)
    problems = isolation.close()
    assert not problems, problems
