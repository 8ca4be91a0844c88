"""``data/index.json``: what the package index listed at the last refresh.

Every distribution whose releases can break a user the catalog does not know about yet
is watched here.  The snapshot is what "new" is measured against (the canary lists what
the index has beyond it), what the release list of the tests is derived from, and the
only place the newest release of anything is written down: code reads it from here (or
from the data the matrix recorded), never from a constant.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

from . import pypi
from .context import Context

DATA = Path(__file__).with_name("data") / "index.json"
WATCHED = ("sglang", "sgl-kernel", "sglang-kernel", "torch", "triton", "transformers",
           "flashinfer-python", "xgrammar", "kernels")
"""sglang and the distributions its releases pin that ship on their own schedule (kernels:
transformers 5 requires it, and its pins have broken ``import sglang`` before)."""
GENERATOR = 1
SOURCE = "the package index's simple API (PEP 691): every version with a file"


def load(path: Path = DATA) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def versions(project: str, path: Path = DATA) -> list[str]:
    """The versions of ``project`` the snapshot records, oldest first."""
    return list(load(path)["projects"].get(project, {}))


def newest_final(project: str, path: Path = DATA) -> str | None:
    """The newest release of ``project`` in the snapshot a plain ``pip install -U`` picks."""
    finals = [v for v in versions(project, path) if pypi.is_final(v)]
    return finals[-1] if finals else None


def entry(release: pypi.Release) -> dict[str, Any]:
    return {"uploaded": release.uploaded, "wheel": bool(release.wheels)}


def listed(context: Context, project: str, recorded: dict[str, Any] | None = None
           ) -> dict[str, dict[str, Any]]:
    """What the index lists for ``project`` now, as snapshot entries; with no index
    (``--index none``) the recorded entries, plus what the find-links folders hold."""
    found: dict[str, dict[str, Any]] = {}
    if context.index != "none":
        found = {v: entry(r) for v, r in pypi.listing(project, context.index).items()}
    elif recorded is not None:
        found = dict(recorded)
    for folder in context.find_links:
        found.update({v: entry(r) for v, r in pypi.listing(project, str(folder)).items()})
    return {v: found[v] for v in sorted(found, key=_key)}


def _key(version: str) -> Version:
    try:
        return Version(version)
    except InvalidVersion:
        return Version("0")


def build(context: Context, path: Path = DATA) -> dict[str, Any]:
    old = load(path)["projects"] if path.exists() else {}
    return {"projects": {p: listed(context, p, old.get(p)) for p in WATCHED}}


def render(data: dict[str, Any]) -> str:
    """One line per version, so that a refresh's diff is one line per new release."""
    lines = ['{"projects": {']
    projects = list(data["projects"].items())
    for at, (project, found) in enumerate(projects):
        lines.append(f" {json.dumps(project)}: {{")
        items = list(found.items())
        lines += [f"  {json.dumps(v)}: {json.dumps(e, sort_keys=True)}"
                  + ("," if i < len(items) - 1 else "") for i, (v, e) in enumerate(items)]
        lines.append(" }" + ("," if at < len(projects) - 1 else ""))
    return "\n".join([*lines, "}}"]) + "\n"


def problems(path: Path = DATA) -> list[str]:
    """Offline: the file is a snapshot of every watched project, versions in order."""
    try:
        projects = load(path)["projects"]
    except (OSError, ValueError, KeyError) as exc:
        return [f"{path.name}: not a snapshot ({type(exc).__name__}: {exc})"]
    out = [f"{path.name}: {p} is not recorded" for p in WATCHED if p not in projects]
    for project, found in projects.items():
        if list(found) != sorted(found, key=_key):
            out.append(f"{path.name}: {project}'s versions are not in version order")
    return out
