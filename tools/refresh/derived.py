"""The generators whose inputs are in the repository: each is written by its own tool,
called here, and checked by rendering it again in memory."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from types import ModuleType
from typing import Any

from packaging.version import Version

from . import snapshot
from .context import Context, log

RELEASES = "tests/data/sglang_releases.txt"
FIRST_RELEASE = Version("0.1.24")
"""The oldest sglang release the tests know (the earlier ones predate the code any patch
touches); a floor, not a newest release."""
MATRIX_PAGES = ("docs/compatibility.md", "docs/compatibility.svg")
PATCHES_PAGE = "docs/patches.md"
REAL_WORLD_PAGE = "docs/real-world.md"


def _stale(context: Context, rel: str, text: str) -> list[str]:
    path = context.root / rel
    current = path.read_text(encoding="utf-8") if path.exists() else None
    return [] if current == text else [f"{rel}: not what its generator writes"]


def _write(context: Context, rel: str, text: str) -> None:
    path = context.root / rel
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")
        log(f"wrote {rel}")


def _script(context: Context, rel: str, name: str) -> ModuleType:
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location(name, context.root / rel)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while it executes
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[name]
    return module


# -- the release list --------------------------------------------------------------------

def releases_text(context: Context) -> str:
    found = snapshot.load(context.root / "tools" / "refresh" / "data" / "index.json")
    wanted = [v for v, e in found["projects"]["sglang"].items()
              if e["wheel"] and Version(v) >= FIRST_RELEASE]
    return "".join(f"{v}\n" for v in wanted)


def check_releases(context: Context) -> list[str]:
    return _stale(context, RELEASES, releases_text(context))


def write_releases(context: Context) -> None:
    _write(context, RELEASES, releases_text(context))


# -- the catalog and the start-up files --------------------------------------------------

def catalog_outputs(context: Context) -> list[str]:
    from sglang_shims.catalog import codegen
    from sglang_shims.catalog import load as _catalog

    return sorted(str(p.relative_to(codegen.PACKAGE.parent))
                  for p in codegen.expected(_catalog.load(toml=True)))


def _codegen(flag: str) -> list[str]:
    from sglang_shims.catalog import codegen

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = codegen.main([flag])
    lines = [line for line in (out.getvalue() + err.getvalue()).splitlines() if line]
    return [] if status == 0 else lines or [f"codegen {flag} exited {status}"]


def check_catalog(context: Context) -> list[str]:
    return _codegen("--check")


def write_catalog(context: Context) -> None:
    problems = _codegen("--write")
    if problems:
        raise RuntimeError("; ".join(problems))


# -- docs/patches.md ---------------------------------------------------------------------

def patches_text() -> str:
    from sglang_shims.cli import docs, survey

    return docs.patches_markdown(survey.survey())


def check_patches_page(context: Context) -> list[str]:
    return _stale(context, PATCHES_PAGE, patches_text())


def write_patches_page(context: Context) -> None:
    _write(context, PATCHES_PAGE, patches_text())


# -- the compatibility page --------------------------------------------------------------

def _matrix_pages(context: Context) -> dict[str, str]:
    from tools.matrix import render, run

    data = run.load(run.DATA)
    return {MATRIX_PAGES[0]: render.markdown(data), MATRIX_PAGES[1]: render.svg(data)}


def check_matrix_pages(context: Context) -> list[str]:
    return [p for rel, text in _matrix_pages(context).items()
            for p in _stale(context, rel, text)]


def write_matrix_pages(context: Context) -> None:
    for rel, text in _matrix_pages(context).items():
        _write(context, rel, text)


# -- docs/real-world.md ------------------------------------------------------------------

def _real_world(context: Context) -> str:
    module = _script(context, "docs/real_world.py", "real_world")
    text: str = module.render(json.loads(module.DATA.read_text(encoding="utf-8")))
    return text


def check_real_world(context: Context) -> list[str]:
    return _stale(context, REAL_WORLD_PAGE, _real_world(context))


def write_real_world(context: Context) -> None:
    _write(context, REAL_WORLD_PAGE, _real_world(context))


# -- the kernel benchmark plots ----------------------------------------------------------

def _plotted(context: Context) -> list[Path]:
    """The results files that have a plot beside them."""
    folder = context.root / "benchmarks" / "results"
    return sorted(p for p in folder.glob("*.md") if p.with_suffix(".svg").exists())


def plot_outputs(context: Context) -> list[str]:
    return [str(p.with_suffix(".svg").relative_to(context.root)) for p in _plotted(context)]


def _plots(context: Context) -> dict[str, str]:
    module = _script(context, "benchmarks/plot_kernels.py", "plot_kernels")
    out = {}
    for results in _plotted(context):
        text = results.read_text(encoding="utf-8")
        out[str(results.with_suffix(".svg").relative_to(context.root))] = module.svg(
            module.heading(text), module.parse(text))
    return out


def check_plots(context: Context) -> list[str]:
    return [p for rel, text in _plots(context).items() for p in _stale(context, rel, text)]


def write_plots(context: Context) -> None:
    for rel, text in _plots(context).items():
        _write(context, rel, text)


# -- the newest tested releases (sglang_shims/catalog/tested.json) ------------------------

TESTED = "sglang_shims/catalog/tested.json"


def tested_text(context: Context) -> str:
    """From the matrix: the newest sglang it ran, the newest transformers, the torch and
    triton it ran on; from the kernel exports: the newest kernel of each name."""
    from tools.matrix import run

    matrix = run.load(run.DATA)
    entries = list(matrix["releases"].values())

    def top(values: list[str | None]) -> str | None:
        found = [Version(v.partition("+")[0]) for v in values if v]
        return str(max(found)) if found else None

    exports = json.loads((context.root / "tools/refresh/data/sgl_kernel_exports.json"
                          ).read_text(encoding="utf-8"))
    newest = {
        "sglang": top(list(matrix["releases"])),
        "transformers": top([e["versions"].get("transformers5") for e in entries]),
        "torch": top([e["versions"].get("torch") for e in entries]),
        "triton": top([e["versions"].get("triton") for e in entries]),
        **{dist: top(found) for dist, found in
           exports["generated_by"]["inputs"]["index"].items()},
    }
    return json.dumps({"newest": {k: v for k, v in sorted(newest.items()) if v},
                       "source": "tools/refresh (tested): the compatibility matrix and the"
                                 " kernel exports"}, indent=1) + "\n"


def check_tested(context: Context) -> list[str]:
    return _stale(context, TESTED, tested_text(context))


def write_tested(context: Context) -> None:
    _write(context, TESTED, tested_text(context))


# -- the kernel exports the package ships ------------------------------------------------

EXPORTS_RUNTIME = "sglang_shims/kernels/surface/data/sgl_kernel_exports.json"


def _exports_runtime(context: Context) -> str:
    from . import kernel_exports

    full = json.loads(kernel_exports.default_output(context.root).read_text(encoding="utf-8"))
    return kernel_exports.compact(full)


def check_exports_runtime(context: Context) -> list[str]:
    return _stale(context, EXPORTS_RUNTIME, _exports_runtime(context))


def write_exports_runtime(context: Context) -> None:
    _write(context, EXPORTS_RUNTIME, _exports_runtime(context))


# -- the part of the matrix doctor reads -------------------------------------------------

MATRIX_RUNTIME = "sglang_shims/cli/doctor/compatibility.json"
_CELL_OUTCOMES = ("not_run", "env_error", "crash")


def _runtime_cell(cell: dict[str, Any]) -> dict[str, Any]:
    """A cell as ``doctor``'s check reads it (sglang_shims/cli/doctor/checks/tested.py):
    which cell, how it ended, the first failing module and error."""
    out = {k: cell[k] for k in ("transformers", "kernel", "mode")}
    out.update({k: cell[k] for k in _CELL_OUTCOMES if k in cell})
    graph = cell.get("graph")
    if graph is not None:
        first = graph.get("first")
        out["graph"] = {"ok": graph["ok"], "failed": graph.get("failed"),
                        "of": graph.get("of"),
                        "first": first and {k: first.get(k) for k in ("module", "error")}}
    if cell.get("model") is not None:
        out["model"] = {k: cell["model"].get(k) for k in ("ok", "error")}
    return out


def _matrix_runtime(context: Context) -> str:
    from tools.matrix import run

    data = run.load(run.DATA)
    releases = {
        release: {"cells": [_runtime_cell(c) for c in entry["cells"]], "date": entry["date"],
                  "kernels": entry.get("kernels", {}), "pins": entry["pins"],
                  "versions": {k: entry["versions"].get(k) for k in ("torch", "transformers5")}}
        for release, entry in data["releases"].items()}
    return json.dumps({"index": data.get("index", {}), "releases": releases,
                       "source": "tools/matrix/compatibility.json, the part doctor reads"
                                 " (python -m tools.refresh compatibility-runtime)"},
                      separators=(",", ":"), ensure_ascii=False) + "\n"


def check_matrix_runtime(context: Context) -> list[str]:
    return _stale(context, MATRIX_RUNTIME, _matrix_runtime(context))


def write_matrix_runtime(context: Context) -> None:
    _write(context, MATRIX_RUNTIME, _matrix_runtime(context))
