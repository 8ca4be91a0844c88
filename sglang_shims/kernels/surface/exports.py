"""The export surface of every published sgl-kernel release (``data/sgl_kernel_exports.json``).

For each release: the names ``sgl_kernel/__init__.py`` binds (``*sgl_kernel.<sub>``: all of
a submodule's, by a star import) and, per submodule, the names it binds.  The stand-in
serves exactly one release's surface, the doctor and the hybrid tier judge names against
them, and the test suite builds stand-in kernels from them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

DATA = Path(__file__).with_name("data") / "sgl_kernel_exports.json"
"""The shipped file, compact (written by ``python -m tools.refresh kernel-exports-runtime``
from the generator's full record in ``tools/refresh/data``); read through this module only."""

NOT_EXPORTS = frozenset({
    "Any", "Callable", "Dict", "Enum", "Iterable", "List", "Literal", "NamedTuple",
    "Optional", "Sequence", "Tuple", "Type", "TYPE_CHECKING", "Union", "annotations",
    "ctypes", "dataclass", "dataclasses", "field", "functools", "glob", "importlib",
    "logging", "math", "os", "platform", "shutil", "struct", "sys", "torch", "triton", "tl",
    "warnings", "Path", "lru_cache", "cache", "partial", "wraps",
})
"""Helper names the real modules import for themselves; never part of the surface."""


@cache
def _compact() -> tuple[list[str], dict[str, Any], list[tuple[str, list[tuple[int, int]]]],
                        dict[str, tuple[list[tuple[int, int]],
                                        list[tuple[str, list[tuple[int, int]]]]]]]:
    """The file as written: (versions, their commit and wheel, [(export, spans)],
    {submodule: (its own spans, [(name, spans)])}); a span is a (first, last) pair of
    indexes into the versions (the file keeps each name once, with the runs of versions
    that have it, instead of every version's whole list: 26 KB instead of 760 KB)."""
    data = json.loads(DATA.read_text(encoding="utf-8"))

    def runs(text: str) -> list[tuple[int, int]]:
        out = []
        for part in text.split():
            first, _, last = part.partition("-")
            out.append((int(first), int(last or first)))
        return out

    exports = [(name, runs(text)) for name, text in data["exports"].items()]
    subs = {sub: (runs(names.pop("")), [(n, runs(t)) for n, t in names.items()])
            for sub, names in data["submodules"].items()}
    return list(data["versions"]), data["versions"], exports, subs


def _has(spans: list[tuple[int, int]], at: int) -> bool:
    return any(first <= at <= last for first, last in spans)


@cache
def entry(version: str) -> dict[str, Any] | None:
    """One version's record, as :func:`surfaces` has it; None for a version the data does
    not know.  Built on its own, so that serving one kernel never expands the others."""
    order, meta, exports, subs = _compact()
    try:
        at = order.index(version)
    except ValueError:
        return None
    commit, wheel = meta[version]
    record: dict[str, Any] = {
        "commit": commit,
        "exports": [name for name, spans in exports if _has(spans, at)],
        "submodules": {sub: [n for n, spans in names if _has(spans, at)]
                       for sub, (own, names) in subs.items() if _has(own, at)},
    }
    if wheel is not None:
        record["wheel"] = wheel
    return record


def versions() -> list[str]:
    """Every kernel version the data knows, in version order."""
    return list(_compact()[0])


@cache
def surfaces() -> dict[str, Any]:
    """``{kernel version: {"commit", "exports": [...], "submodules": {sub: [...]}, "wheel"}}``
    in version order (built once per process, in one pass over the runs; :func:`entry`
    gives one version without building the others)."""
    order, meta, exports, subs = _compact()
    out: dict[str, Any] = {}
    for version in order:
        commit, wheel = meta[version]
        out[version] = {"commit": commit, "exports": [], "submodules": {}}
        if wheel is not None:
            out[version]["wheel"] = wheel
    records = list(out.values())
    for name, spans in exports:
        for first, last in spans:
            for record in records[first:last + 1]:
                record["exports"].append(name)
    for sub, (own, names) in subs.items():
        for first, last in own:
            for record in records[first:last + 1]:
                record["submodules"][sub] = []
        for name, spans in names:
            for first, last in spans:
                for record in records[first:last + 1]:
                    record["submodules"][sub].append(name)
    return out


def names(found: Iterable[str]) -> list[str]:
    """The public names among ``found``: identifiers, not private, not a helper import."""
    return [n for n in found if n.isidentifier() and not n.startswith("_")
            and n not in NOT_EXPORTS]


def exported(version: str, package: str = "sgl_kernel") -> set[str]:
    """The public names ``package`` (the top level) binds in kernel ``version``: its own and
    those of the submodules it star-imports."""
    record = entry(version)
    if record is None:
        raise KeyError(version)
    found = set(names([e for e in record["exports"] if not e.startswith("*")]))
    for star in (e for e in record["exports"] if e.startswith(f"*{package}.")):
        found |= set(names(record["submodules"].get(star.split(".", 1)[1], [])))
    return found


def bound(version: str) -> set[str] | None:
    """Every name ``from sgl_kernel import X`` finds in kernel ``version`` (None: a version
    the data does not know; a local part such as ``+cu128`` is dropped): top-level names,
    names of star-imported submodules and the submodules themselves (``from sgl_kernel
    import allreduce`` loads a file), helper imports included."""
    record = entry(version.partition("+")[0])
    if record is None:
        return None
    found = {e for e in record["exports"] if not e.startswith("*")}
    for star in (e for e in record["exports"] if e.startswith("*sgl_kernel.")):
        found |= set(record["submodules"].get(star.split(".", 1)[1], []))
    return found | {sub.split(".", 1)[0] for sub in record["submodules"]}


def choose_surface(pinned: str | None) -> str:
    """The kernel release whose export surface to serve: the one sglang pins, else the
    newest known release not newer than the pin, else (a pin older than every known
    release) the oldest known, else (no pin) the newest known.

    Why the oldest for an older pin: sglang 0.4.3.post3 and 0.4.3.post4 pin sgl-kernel
    0.0.3.post6, older than the data (it starts at 0.0.4, where the package moved to
    ``python/sgl_kernel/``); 0.0.4's surface has every name they import at module level,
    whereas the newest (sglang-kernel 0.4.x) dropped four of them, RoPE's entry point
    among them, which their rotary embedding then cannot call."""
    from packaging.version import InvalidVersion, Version

    known = [v for v in versions() if "+" not in v]
    if pinned in versions():
        return pinned
    if pinned:
        try:
            limit = Version(pinned)
            older = [v for v in known if Version(v) <= limit]
            return max(older, key=Version) if older else min(known, key=Version)
        except InvalidVersion:
            pass
    return max(known, key=Version)


def sglang_kernel_pin() -> str | None:
    """The sgl-kernel / sglang-kernel version the installed sglang requires, if any.

    An exact pin is that version.  sglang 0.4.1-0.4.3.post4 name only a floor on the old
    distribution name (``sgl-kernel>=0.0.3.post6``): there the answer is the newest known
    release still published as sgl-kernel (before 0.4.0), the one ``pip install`` gives
    for that floor, rather than none (which :func:`choose_surface` would take as the
    newest sglang-kernel, whose surface dropped names those releases import)."""
    import re
    from importlib import metadata

    from packaging.version import InvalidVersion, Version

    try:
        requirements = metadata.requires("sglang") or []
    except metadata.PackageNotFoundError:
        return None
    for line in requirements:
        match = re.match(r"^(sgl-kernel|sglang-kernel)\s*==\s*([^;\s]+)", line)
        if match:
            return match.group(2)
    for line in requirements:
        match = re.match(r"^sgl-kernel\s*>=\s*([^,;\s]+)\s*(;|$)", line)
        if match:
            try:
                floor = Version(match.group(1))
            except InvalidVersion:
                return None
            old = [Version(v) for v in versions() if "+" not in v
                   and floor <= Version(v) < Version("0.4.0")]
            return str(max(old)) if old else None
    return None
