"""Which ``sgl_kernel`` names each sglang release needs, and which kernels export them.

sglang binds most kernel entry points with module-level ``from sgl_kernel import ...``
lines.  When the installed kernel is older or newer than the one that sglang release
was built against, one missing name fails the import of a whole model family, long
before any kernel runs.  The patch ``sgl-kernel-missing-symbols`` turns exactly those
names into lazy proxies; this module holds the facts it needs, read from the wheels:

* for every published sglang release, the names it imports from ``sgl_kernel`` at
  module level *without* a guard (a guard -- ``try/except ImportError``, a
  ``hasattr``/``getattr`` probe -- means sglang has its own fallback, which a proxy
  would defeat, so a name imported only under guards is never proxied; one imported
  guarded in some modules and unguarded in others is, and the data lists the guarded
  modules, which keep getting "missing");
* the kernel each release pins (``Requires-Dist``), for the remedy; a name that the
  pinned kernel does not export either is left out (sglang imports it on another
  platform's path, or from a kernel newer than the data), so a pinned install is
  never touched;
* for every name, the kernel versions that export it (``data/sgl_kernel_exports.json``).

The data file is small and read once per process when the patch wakes (``json.loads``
of ~40 KB).  ``tools/regen_kernel_symbols.py`` regenerates it from the wheels; a test
checks the committed file against a fresh reading of a sample of them.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

DATA = Path(__file__).with_name("data") / "sgl_kernel_symbols.json"
"""The committed file; read through :func:`load` only (regenerated outside the package)."""
SCHEMA = 1


@cache
def load() -> dict[str, Any]:
    """The committed data (see the module docstring)."""
    data: dict[str, Any] = json.loads(DATA.read_text(encoding="utf-8"))
    return data


def release(version: str) -> str:
    """A version as the data keys it: the local part (``+cu128``) dropped."""
    return version.partition("+")[0]


def _index(sglang: str) -> int | None:
    try:
        return int(load()["releases"].index(release(sglang)))
    except ValueError:
        return None


def _needs(sglang: str) -> dict[str, str] | None:
    at = _index(sglang)
    if at is None:
        return None
    return {name: entry["module"] for name, entry in load()["needs"].items()
            if any(a <= at <= b for a, b in entry["spans"])}


def needed(sglang: str) -> dict[str, str] | None:
    """{name: a module importing it} of ``sgl_kernel`` itself for one sglang release; None
    if not in the data."""
    found = _needs(sglang)
    return None if found is None else {n: m for n, m in found.items() if "." not in n}


def needed_from_submodules(sglang: str) -> dict[str, dict[str, str]]:
    """{submodule: {name: a module importing it}} for one sglang release (``*``: the
    submodule itself, ``import sgl_kernel.<sub>``)."""
    out: dict[str, dict[str, str]] = {}
    for name, module in (_needs(sglang) or {}).items():
        sub, dot, attr = name.rpartition(".")
        if dot:
            out.setdefault(sub, {})[attr] = module
    return out


def guarded_in(name: str, sglang: str) -> frozenset[str]:
    """Modules of release ``sglang`` that import ``name`` only under a guard (``try/except
    ImportError``, a ``hasattr`` probe) while another module imports it unguarded.

    Those modules have a fallback of their own for when the kernel lacks the name; the
    patch keeps answering them "missing" (an ImportError there, as stock) and gives the
    stand-in only to the unguarded importers, whose import would fail without it.
    """
    at = _index(sglang)
    entry = load()["needs"].get(name) or {}
    return frozenset(module for module, spans in entry.get("guarded_in", {}).items()
                     if at is not None and any(a <= at <= b for a, b in spans))


def pinned(sglang: str) -> str | None:
    """The kernel requirement the sglang release declares (``sgl-kernel==0.1.0``)."""
    at = _index(sglang)
    return None if at is None else str(load()["pins"][at] or "") or None


def exported_by(name: str) -> str:
    """The kernel versions that export ``name``, as ranges: ``0.2.2-0.3.17.post2``."""
    entry = load()["needs"].get(name)
    if entry and entry["exported_by"]:
        return ", ".join(entry["exported_by"])
    first, last = load()["kernels"]
    return f"no published kernel version ({first} to {last})"


def deferred(kernel: str | None) -> dict[str, str]:
    """{name: patch id} that another built-in patch supplies for this kernel version."""
    from packaging.specifiers import SpecifierSet
    from packaging.version import InvalidVersion, Version

    owned = {}
    for name, (patch_id, spec) in load()["deferred"].items():
        try:
            if kernel is None or Version(kernel) in SpecifierSet(spec):
                owned[name] = patch_id
        except InvalidVersion:
            owned[name] = patch_id
    return owned


def needing(name: str) -> list[str]:
    """The sglang releases that import ``name`` unguarded (for tests and the docs)."""
    entry = load()["needs"].get(name, {"spans": []})
    return [v for i, v in enumerate(load()["releases"])
            if any(a <= i <= b for a, b in entry["spans"])]
