"""Was this exact sglang / transformers / kernel combination run in the matrix?

The compatibility matrix (``docs/compatibility.md``, run by ``python -m tools.matrix.run``)
imports every sglang release's serving graph on today's torch and runs a tiny model
through it, stock and with the shims.  Its results ship with the package
(``compatibility.json`` in the doctor package), so a user can be told what happened to
their combination on the day it was run -- or that it was never run, which is worth
knowing too.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

from ....patching.dists import KERNEL_DISTS
from ..facts import Facts
from ..finding import Finding, Level
from ..version_text import public_version

DATA = Path(__file__).parents[1] / "compatibility.json"
CHECK = "tested"


@cache
def matrix() -> dict[str, Any]:
    """The shipped results; an empty matrix when the file is missing (a partial install)."""
    try:
        data: dict[str, Any] = json.loads(DATA.read_text(encoding="utf-8"))
    except OSError:
        return {"releases": {}}
    return data


_SCRATCH = re.compile(r"/\S*?/sglang-matrix-\w+/[^/\s]+/")


def tidy(text: str) -> str:
    """An error as the matrix recorded it, without the run's scratch folder (the stand-in
    kernel's path), which means nothing on another machine."""
    return _SCRATCH.sub("<stand-in>/", text)


def _public(version: str | None) -> str | None:
    """The exact release a version names, as the matrix keys it: the local label dropped
    (``2.11.0+cu130`` -> ``2.11.0``), every other part kept and normalised
    (``0.5.3-post1`` -> ``0.5.3.post1``): a ``.postN`` is a release of its own."""
    return None if version is None else public_version(version)


def situation(entry: dict[str, Any], transformers: str | None, kernel: str | None,
              transformers5: str) -> tuple[str | None, str | None]:
    """Which matrix columns this environment is: (transformers, kernel) labels or None."""
    tf = ("pinned" if transformers == entry["pins"].get("transformers")
          else "newest5" if transformers == transformers5 else None)
    kernels = entry.get("kernels", {})
    slot = ("none" if kernel is None else "pinned" if kernel == kernels.get("pinned")
            else "newer" if kernel == kernels.get("newer") else None)
    return tf, slot


def _outcome(cell: dict[str, Any] | None) -> tuple[bool | None, str]:
    """(passed, what happened); passed is None when the cell was not run.

    A cell whose environment could not be built (``env_error``: no resolvable set of
    packages) or whose run died (``crash``) was run, and failed: that combination does
    not work as installed, which the user should hear as a failure, not as "not run"."""
    if cell is None:
        return None, "not in the matrix"
    for key in ("not_run", "env_error", "crash"):
        if key in cell:
            return (None if key == "not_run" else False), f"{key.replace('_', ' ')}:" \
                f" {tidy(cell[key])}"
    graph = cell["graph"]
    if not graph["ok"]:
        first = graph.get("first") or {}
        return False, (f"{graph['failed']} of {graph['of']} serving modules failed to import,"
                       f" first {first.get('module')}: {tidy(str(first.get('error')))}")
    model = cell.get("model")
    if model is None:
        return True, "the serving graph imports"
    if model.get("ok") is None:
        return True, f"the serving graph imports (the model check could not run on CPU:" \
            f" {model.get('error')})"
    if model["ok"]:
        return True, "the serving graph imports and a small Qwen3 and Llama agree with" \
            " transformers"
    return False, f"the serving graph imports but the model check failed: {model.get('error')}"


def cell_of(entry: dict[str, Any], tf: str, kernel: str, mode: str) -> dict[str, Any] | None:
    """The cell of a release's matrix entry at (transformers flavour, kernel, mode), if run;
    the matrix's own page reads its data through this too (tools/matrix/render.py)."""
    for cell in entry["cells"]:
        if (cell["transformers"], cell["kernel"], cell["mode"]) == (tf, kernel, mode):
            found: dict[str, Any] = cell
            return found
    return None


def _newest(releases: list[str]) -> str | None:
    from packaging.version import InvalidVersion, Version

    try:
        return str(max(releases, key=Version)) if releases else None
    except InvalidVersion:
        return None


def _after(version: str, newest: str) -> bool:
    from packaging.version import InvalidVersion, Version

    try:
        return Version(version) > Version(newest)
    except InvalidVersion:
        return False


def _by_range(sglang: str) -> int:
    """How many built-in patches' sglang gates admit ``sglang``."""
    from ....catalog import load as _catalog
    from ....engine.gates import Environment, check_gate

    env = Environment(versions={"sglang": sglang}, hermetic=True)
    return sum(1 for m in _catalog.load().manifests for g in m.requires
               if g.dists == ("sglang",) and check_gate(g, env)[0])


def check_tested(facts: Facts) -> list[Finding]:
    env = facts.env
    sglang = _public(env.version("sglang"))
    if sglang is None:
        return []
    data = matrix()
    entry = data["releases"].get(sglang)
    known = list(data.get("index", {}).get("releases", []))
    newest = _newest(list(data["releases"]))
    if entry is None and sglang not in known and newest is not None and _after(sglang, newest):
        count = _by_range(sglang)
        return [Finding(CHECK, Level.INFO,
                        f"sglang {sglang} is newer than the tested matrix (newest tested:"
                        f" {newest}); {count} patch{'' if count == 1 else 'es'} apply by"
                        " range: their gates admit it, nothing has checked them on it yet",
                        "`sglang-shims status` names the patches judged on untested ground;"
                        " a newer sglang-shims may have tested it")]
    if entry is None:
        tested = ", ".join(data["releases"]) or "none"
        why = ("is not in the compatibility matrix (releases run: " + tested + ")"
               if sglang not in known else
               "is in the compatibility matrix's range but was not run yet (run: "
               + tested + ")")
        return [Finding(CHECK, Level.INFO, f"sglang {sglang} {why}",
                        "see docs/compatibility.md for the releases that were run")]
    transformers = _public(env.version("transformers"))
    _dist, kernel = env.first_installed(KERNEL_DISTS)
    kernel = _public(kernel)
    tf5 = str(entry["versions"].get("transformers5")
              or data.get("index", {}).get("transformers5", ""))
    tf, slot = situation(entry, transformers, kernel, tf5)
    torch_run = _public(entry["versions"].get("torch"))
    where = f"sglang {sglang} (matrix run {entry['date']}, torch {torch_run})"
    if tf is None or slot is None:
        kernels = entry.get("kernels", {})
        return [Finding(CHECK, Level.INFO,
                        f"{where}: this exact combination was not run (transformers"
                        f" {transformers or 'not installed'},"
                        f" {'kernel ' + kernel if kernel else 'no kernel'}); the matrix ran"
                        f" transformers {entry['pins'].get('transformers')} (the pin) and"
                        f" {tf5}, with no kernel or the kernels {kernels.get('pinned')} and"
                        f" {kernels.get('newer')}",
                        "docs/compatibility.md lists what was run")]
    shims_ok, shims_text = _outcome(cell_of(entry, tf, slot, "shims"))
    stock_cell = cell_of(entry, tf, slot, "stock")
    stock_ok, _ = _outcome(stock_cell)
    column = f"transformers {transformers}, " + ("no kernel" if slot == "none" else
                                                 f"kernel {kernel} (its export surface)")
    stock = ("passes" if stock_ok else "not run" if stock_ok is None else
             "could not be set up" if "env_error" in (stock_cell or {}) else
             "crashed" if "crash" in (stock_cell or {}) else "fails")
    detail = f"{where}, {column}: with the shims {shims_text}; stock it {stock}"
    if torch_run and _public(env.version("torch")) != torch_run:
        detail += f" (your torch is {env.version('torch')}, the run used {torch_run})"
    if shims_ok:
        return [Finding(CHECK, Level.OK, detail)]
    if shims_ok is None:
        return [Finding(CHECK, Level.INFO, detail, "docs/compatibility.md lists what was run")]
    return [Finding(CHECK, Level.WARN, detail,
                    f"use the transformers sglang {sglang} pins"
                    f" ({entry['pins'].get('transformers')}) or another release that passes in"
                    " docs/compatibility.md")]
