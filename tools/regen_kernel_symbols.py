"""Regenerate ``sglang_shims/kernels/surface/data/sgl_kernel_symbols.json`` from the wheels.

Reads every published sglang wheel (the releases in ``tests/data/sglang_releases.txt``,
fetched into the wheel cache on first use: this reaches the network) without installing
it: an ``ast`` walk of each ``sglang/*.py`` for the ``sgl_kernel`` names imported at
module level, with and without a guard, and each release's kernel pin from its
``METADATA``.  What the data means, and how the runtime reads it, is
:mod:`sglang_shims.kernels.surface.symbols`.  Run from the repository::

    python tools/regen_kernel_symbols.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run as a script: the package beside this folder
    sys.path.insert(0, str(REPO))

from sglang_shims.catalog.validate import load_text  # noqa: E402
from sglang_shims.kernels.surface import symbols  # noqa: E402
from sglang_shims.kernels.surface.exports import surfaces  # noqa: E402
from sglang_shims.testing import wheels  # noqa: E402

# Exceptions whose handler turns a failed import into sglang's own fallback.
_GUARDS = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException",
                     "AttributeError"})


def _handler_names(handler: Any) -> set[str]:
    import ast

    if handler.type is None:
        return {"BaseException"}
    nodes = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return {n.id if isinstance(n, ast.Name) else getattr(n, "attr", "") for n in nodes}


def imports_of(source: str) -> tuple[set[str], set[str]]:
    """(unguarded module-level, guarded anywhere) ``sgl_kernel`` names of one file.

    Module level includes ``if``/``with``/class bodies (they run at import); function
    bodies are left out (their import fails only when called, as stock).  A name is
    guarded when it is imported inside a ``try`` that catches an import failure, or
    probed with ``hasattr``/``getattr`` on ``sgl_kernel``.  Names from a submodule are
    ``<sub>.<name>`` (``from sgl_kernel.kvcacheio import transfer_kv_direct``), and
    ``import sgl_kernel.<sub>`` is ``<sub>.*`` (the module itself is needed).
    """
    import ast

    tree = ast.parse(source)
    plain: set[str] = set()
    guarded: set[str] = set()

    def visit(node: ast.AST, top: bool, guard: bool) -> None:
        found: set[str] | None = None
        if isinstance(node, ast.ImportFrom) and not node.level and node.module \
                and node.module.partition(".")[0] == "sgl_kernel":
            sub = node.module.partition(".")[2]
            found = {f"{sub}.{a.name}" if sub else a.name for a in node.names if a.name != "*"}
        elif isinstance(node, ast.Import):
            found = {a.name.partition(".")[2] + ".*" for a in node.names
                     if a.name.startswith("sgl_kernel.")} or None
        if found is not None:
            (guarded if guard else plain if top else set()).update(found)
            return
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") in ("hasattr", "getattr") \
                and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) \
                and isinstance(node.args[0], ast.Name) and node.args[0].id == "sgl_kernel":
            guarded.add(str(node.args[1].value))
        if isinstance(node, ast.Try):
            catches = set().union(*(_handler_names(h) for h in node.handlers)) \
                if node.handlers else set()
            inner = guard or bool(catches & _GUARDS)
            for stmt in node.body:
                visit(stmt, top, inner)
            rest: list[ast.AST] = [*node.handlers, *node.orelse, *node.finalbody]
            for other in rest:
                visit(other, top, guard)
            return
        local = top and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        for child in ast.iter_child_nodes(node):
            visit(child, local, guard)

    visit(tree, True, False)
    return plain, guarded


def _pin(metadata: str) -> str | None:
    import re

    pins = set()
    for line in metadata.splitlines():
        m = re.match(r"Requires-Dist:\s*(sgl[-_]kernel|sglang[-_]kernel)\s*\(?([=<>!~][^;)]*)",
                     line, re.I)
        if m:
            pins.add(f"{m.group(1).lower().replace('_', '-')}{m.group(2).replace(' ', '')}")
    return sorted(pins)[0] if pins else None


def scan_wheel(path: Path) -> dict[str, Any]:
    """{"pin", "needs": {name: module}, "guarded_in": {name: [module]}} of one sglang
    wheel, read without installing it (``guarded_in``: see :func:`guarded_in`)."""
    import zipfile

    plain: dict[str, str] = {}
    guarded: dict[str, set[str]] = {}
    pin = None
    with zipfile.ZipFile(path) as wheel:
        for info in sorted(wheel.infolist(), key=lambda i: i.filename):
            name = info.filename
            if name.endswith(".dist-info/METADATA"):
                pin = _pin(wheel.read(info).decode("utf-8", "replace"))
            if not (name.startswith("sglang/") and name.endswith(".py")):
                continue
            text = wheel.read(info).decode("utf-8", "replace")
            if "sgl_kernel" not in text:
                continue
            try:
                mod_plain, mod_guarded = imports_of(text)
            except SyntaxError:
                continue
            module = name[:-3].removesuffix("/__init__").replace("/", ".")
            for symbol in sorted(mod_plain):
                plain.setdefault(symbol, module)
            # a module that also imports the name unguarded fails there: not a guarded one
            for symbol in mod_guarded - mod_plain:
                guarded.setdefault(symbol, set()).add(module)
    # A name imported only under guards is never needed (sglang's fallback must keep
    # working); one imported unguarded anywhere is, since that module's import fails.
    return {"pin": pin, "needs": dict(sorted(plain.items())),
            "guarded_in": {k: sorted(v) for k, v in sorted(guarded.items()) if k in plain}}


def _spans(present: list[bool], versions: list[str]) -> list[str]:
    spans, start = [], None
    for i, here in enumerate([*present, False]):
        if here and start is None:
            start = i
        elif not here and start is not None:
            first, last = versions[start], versions[i - 1]
            spans.append(first if first == last else f"{first}-{last}")
            start = None
    return spans


def _exports(entry: dict[str, Any], name: str) -> bool:
    """Does a kernel's export entry bind ``name`` (``<sub>.<name>``, ``<sub>.*``: from its
    submodule)?"""
    sub, dot, attr = name.rpartition(".")
    if not dot:
        return name in entry["exports"]
    names = entry["submodules"].get(sub)
    return names is not None and (attr == "*" or attr in names)


def _index_spans(present: list[bool]) -> list[list[int]]:
    """[[first, last], ...] index ranges where ``present`` holds."""
    spans, start = [], None
    for i, here in enumerate([*present, False]):
        if here and start is None:
            start = i
        elif not here and start is not None:
            spans.append([start, i - 1])
            start = None
    return spans


def build(wheels: dict[str, Path]) -> dict[str, Any]:
    """The data for ``{sglang version: wheel}`` (in release order) and the export data.

    Kept small for wake-up: each name lists the spans of release indexes that import it.
    """
    exports = surfaces()
    kernels = [v for v in exports if "+" not in v]
    scanned = {v: scan_wheel(p) for v, p in wheels.items()}
    for entry in scanned.values():
        # A name the pinned kernel lacks too is imported on another platform's path
        # (MUSA, XPU, HIP) or from a kernel not yet published: not the skew we repair.
        pin = (entry["pin"] or "").partition("==")[2]
        if pin in exports:
            entry["needs"] = {n: m for n, m in entry["needs"].items()
                              if _exports(exports[pin], n)}
    releases = [v for v, e in scanned.items() if e["needs"] or e["pin"]]
    needs: dict[str, dict[str, Any]] = {}
    for name in sorted({n for e in scanned.values() for n in e["needs"]}):
        module = next(scanned[v]["needs"][name] for v in releases if name in scanned[v]["needs"])
        needs[name] = {"spans": _index_spans([name in scanned[v]["needs"] for v in releases]),
                       "module": module,
                       "exported_by": _spans([_exports(exports[k], name) for k in kernels],
                                             kernels)}
        guards = sorted({m for v in releases if name in scanned[v]["needs"]
                         for m in scanned[v]["guarded_in"].get(name, ())})
        if guards:
            needs[name]["guarded_in"] = {
                m: _index_spans([name in scanned[v]["needs"]
                                 and m in scanned[v]["guarded_in"].get(name, ())
                                 for v in releases]) for m in guards}
    return {"schema": symbols.SCHEMA,
            "source": "sglang wheels: ast walk of every sglang/*.py (module-level"
                      " `from sgl_kernel import`; names imported only under guards left out,"
                      " guarded_in: the guarded importers of the rest) and METADATA;"
                      " kernel spans from sgl_kernel_exports.json",
            "kernels": [kernels[0], kernels[-1]],
            "releases": releases, "pins": [scanned[v]["pin"] for v in releases],
            "deferred": _deferred(), "needs": needs}


def _deferred() -> dict[str, list[str]]:
    """[[provide]] names of built-in patches on ``sgl_kernel``: {name: [patch id, kernel
    spec]}.  Inside that patch's kernel range it owns the name (its remedy, its toggle)."""
    found = {}
    root = REPO / "patches"
    for manifest in sorted(root.glob("*/manifest.toml")):
        parsed = load_text(manifest.read_text(encoding="utf-8"), str(manifest), manifest.parent)
        if parsed.target == "sgl_kernel":
            spec = next((g.spec for g in parsed.requires if "sgl-kernel" in g.dists), "")
            for provide in parsed.provides:
                found[provide.name] = [parsed.id, spec]
    return found


def render(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=0, separators=(",", ":")) + "\n"


def main() -> None:
    """Regenerate the data file from the wheel cache (every release in tests/data)."""
    releases = REPO / "tests" / "data" / "sglang_releases.txt"
    versions = releases.read_text(encoding="utf-8").split()
    symbols.DATA.write_text(render(build({v: wheels.fetch("sglang", v) for v in versions})),
                            encoding="utf-8")


if __name__ == "__main__":
    main()
