"""The provenance of every committed file the refresh writes from outside the repository.

``data/provenance.json`` says, per generator whose inputs are not in the repository (the
package index, published wheels, sglang's git history, a matrix run): which version of
the generator wrote its outputs, from what source, on which day, and each output's
sha256.  ``--check`` compares the sha256 with the file: a file edited by hand, or written
by an older generator, is named with the command that rewrites it.  Files derived from
the repository alone need no entry: ``--check`` regenerates them in memory instead.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from .context import REPO

LEDGER = Path(__file__).with_name("data") / "provenance.json"


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def load(path: Path = LEDGER) -> dict[str, Any]:
    try:
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    return data


def stamp(name: str, version: int, source: str, date: str, outputs: list[Path],
          path: Path = LEDGER, root: Path = REPO) -> None:
    """Record that generator ``name`` v``version`` wrote ``outputs`` from ``source`` on
    ``date``; the entry is rewritten only when an output or the generator changed, so a
    refresh that found nothing new leaves the ledger (and its dates) as they were."""
    ledger = load(path)
    files = {str(p.relative_to(root)): digest(p) for p in outputs}
    old = ledger.get(name, {})
    if old.get("outputs") == files and old.get("generator") == version:
        return
    ledger[name] = {"date": date, "generator": version, "outputs": files, "source": source}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(dict(sorted(ledger.items())), indent=1, sort_keys=True) + "\n",
                    encoding="utf-8")


def problems(name: str, version: int, outputs: list[Path], path: Path = LEDGER,
             root: Path = REPO) -> list[str]:
    """Why ``outputs`` are not what generator ``name`` v``version`` last wrote."""
    entry = load(path).get(name)
    if entry is None:
        return [f"{name}: no provenance recorded"]
    out = []
    if entry.get("generator") != version:
        out.append(f"{name}: written by generator v{entry.get('generator')}, now v{version}")
    recorded: dict[str, str] = entry.get("outputs", {})
    here = {str(p.relative_to(root)) for p in outputs}
    for rel in sorted(set(recorded) | here):
        file = root / rel
        if rel not in recorded:
            out.append(f"{rel}: not recorded as written by {name}")
        elif rel not in here or not file.is_file():
            out.append(f"{rel}: recorded but missing")
        elif digest(file) != recorded[rel]:
            out.append(f"{rel}: changed since {name} wrote it on {entry.get('date')}")
    return out
