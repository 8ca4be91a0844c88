"""The newest release of each distribution the catalog was tested against (``tested.json``).

Why: a patch's range is checked against every published wheel, and the compatibility
matrix runs every sglang release; a release that came out after the data was made passes
the range checks only because its gates are open-ended (``>=0.4.0``, say).  Such a patch is
judged on untested ground, and ``status()``, the per-process report and ``doctor`` say
so.  The file is written by ``python -m tools.refresh tested`` from the matrix data and
the kernel exports; it is read only when a status or report is made, never at wake-up.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from functools import cache
from pathlib import Path

DATA = Path(__file__).with_name("tested.json")


@cache
def newest() -> dict[str, str]:
    """``{distribution: newest tested release}``; empty when the file is missing."""
    try:
        data: dict[str, str] = json.loads(DATA.read_text(encoding="utf-8"))["newest"]
    except (OSError, ValueError, KeyError):
        return {}
    return data


def newer(installed: str | None, tested: str | None) -> bool:
    """Is ``installed`` (local label dropped) a release after ``tested``?"""
    if not installed or not tested:
        return False
    from packaging.version import InvalidVersion, Version

    try:
        return Version(installed.partition("+")[0]) > Version(tested)
    except InvalidVersion:
        return False


def untested(dists: Iterable[str], version: Callable[[str], str | None]) -> list[str]:
    """One line per gated distribution installed in a release newer than the data's."""
    table = newest()
    out = []
    for dist in dict.fromkeys(dists):
        found = version(dist)
        if newer(found, table.get(dist)):
            out.append(f"{dist} {found} is newer than the newest tested ({table[dist]})")
    return out
