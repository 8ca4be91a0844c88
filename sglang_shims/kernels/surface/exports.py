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
"""The committed file; read through :func:`surfaces` only (regenerated outside the package)."""

NOT_EXPORTS = frozenset({
    "Any", "Callable", "Dict", "Enum", "Iterable", "List", "Literal", "NamedTuple",
    "Optional", "Sequence", "Tuple", "Type", "TYPE_CHECKING", "Union", "annotations",
    "ctypes", "dataclass", "dataclasses", "field", "functools", "glob", "importlib",
    "logging", "math", "os", "platform", "shutil", "struct", "sys", "torch", "triton", "tl",
    "warnings", "Path", "lru_cache", "cache", "partial", "wraps",
})
"""Helper names the real modules import for themselves; never part of the surface."""


@cache
def surfaces() -> dict[str, Any]:
    """``{kernel version: {"exports": [...], "submodules": {sub: [...]}}}``, in publication
    order (read once per process)."""
    data: dict[str, Any] = json.loads(DATA.read_text(encoding="utf-8"))["versions"]
    return data


def names(found: Iterable[str]) -> list[str]:
    """The public names among ``found``: identifiers, not private, not a helper import."""
    return [n for n in found if n.isidentifier() and not n.startswith("_")
            and n not in NOT_EXPORTS]


def exported(version: str, package: str = "sgl_kernel") -> set[str]:
    """The public names ``package`` (the top level) binds in kernel ``version``: its own and
    those of the submodules it star-imports."""
    entry = surfaces()[version]
    found = set(names([e for e in entry["exports"] if not e.startswith("*")]))
    for star in (e for e in entry["exports"] if e.startswith(f"*{package}.")):
        found |= set(names(entry["submodules"].get(star.split(".", 1)[1], [])))
    return found


def bound(version: str) -> set[str] | None:
    """Every name ``from sgl_kernel import X`` finds in kernel ``version`` (None: a version
    the data does not know; a local part such as ``+cu128`` is dropped): top-level names,
    names of star-imported submodules and the submodules themselves (``from sgl_kernel
    import allreduce`` loads a file), helper imports included."""
    entry = surfaces().get(version.partition("+")[0])
    if entry is None:
        return None
    found = {e for e in entry["exports"] if not e.startswith("*")}
    for star in (e for e in entry["exports"] if e.startswith("*sgl_kernel.")):
        found |= set(entry["submodules"].get(star.split(".", 1)[1], []))
    return found | {sub.split(".", 1)[0] for sub in entry["submodules"]}


def choose_surface(pinned: str | None) -> str:
    """The kernel release whose export surface to serve: the one sglang pins, else the
    newest known release not newer than the pin, else the newest known."""
    from packaging.version import InvalidVersion, Version

    known = [v for v in surfaces() if "+" not in v]
    if pinned in surfaces():
        return pinned
    if pinned:
        try:
            limit = Version(pinned)
            older = [v for v in known if Version(v) <= limit]
            if older:
                return max(older, key=Version)
        except InvalidVersion:
            pass
    return max(known, key=Version)


def sglang_kernel_pin() -> str | None:
    """The sgl-kernel / sglang-kernel version the installed sglang requires, if any."""
    import re
    from importlib import metadata

    try:
        requirements = metadata.requires("sglang") or []
    except metadata.PackageNotFoundError:
        return None
    for line in requirements:
        match = re.match(r"^(sgl-kernel|sglang-kernel)\s*==\s*([^;\s]+)", line)
        if match:
            return match.group(2)
    return None
