"""What the suite downloads: a log of every wheel and overlay it fetches, and its size cold.

Loaded as a plugin by ``tests/conftest.py``; it does nothing unless
``SGLANG_SHIMS_FETCH_LOG`` names a file.  Then every wheel the fixtures fetch
(:func:`sglang_shims.testing.wheels.fetch`) and every package an overlay installs
(``tools.matrix.run``) is appended to it, one JSON line each, from every worker.  After the
run::

    python -m tests.support.fetch_log LOG

prints what a cold run (empty caches) downloads: the wheels' own sizes (from the cache
the run filled) and the overlays' packages (the file the index serves for this Python,
from its simple API), and the disk the unpacked wheels take.  The README states the
result; this is how it was counted.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

VARIABLE = "SGLANG_SHIMS_FETCH_LOG"


def _append(entry: dict[str, Any]) -> None:
    # the test (or the fixture set up for it) that asked: which tests still download
    entry["test"] = os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0]
    with Path(os.environ[VARIABLE]).open("a", encoding="utf-8") as log:
        log.write(json.dumps(entry) + "\n")


def _logged_wheel(get: Callable[..., Path]) -> Callable[..., Path]:
    """``wheels.fetch`` or ``wheels.unpack``, logging the wheel it stands for (an unpacked
    folder found in the cache never calls fetch: both are wrapped)."""
    from sglang_shims.testing import wheels

    def wrapper(dist: str, version: str, cache: Path | None = None,
                pip_args: tuple[str, ...] = ()) -> Path:
        path = get(dist, version, cache, pip_args)
        if cache is not None:  # a test's own cache of wheels it built: nothing downloaded
            return path
        wheel = wheels.find_cached(dist, version)
        _append({"kind": "wheel", "dist": dist, "version": version,
                  "file": wheel.name if wheel else "", "size": wheel.stat().st_size if wheel
                  else 0, "unpacked": path.is_dir()})
        return path

    return wrapper


def _logged_overlay(overlay: Callable[..., Path]) -> Callable[..., Path]:
    def wrapper(*args: Any, **kwargs: Any) -> Path:
        dest = overlay(*args, **kwargs)
        todo = (dest / "installed.txt").read_text(encoding="utf-8").split()
        _append({"kind": "overlay", "overlay": dest.name, "packages": todo})
        return dest

    return wrapper


def pytest_configure(config: pytest.Config) -> None:
    if not os.environ.get(VARIABLE):
        return
    from sglang_shims.testing import wheels
    from tools.matrix import run

    wheels.fetch = _logged_wheel(wheels.fetch)  # type: ignore[method-assign]
    wheels.unpack = _logged_wheel(wheels.unpack)  # type: ignore[method-assign]
    run.overlay = _logged_overlay(run.overlay)  # type: ignore[method-assign]


def _served_size(requirement: str) -> int:
    """The size of the file the index serves for ``name==version`` on this interpreter."""
    from packaging.tags import sys_tags
    from packaging.utils import parse_wheel_filename

    from tools.refresh import pypi

    name, _, version = requirement.partition("==")
    release = pypi.listing(name).get(version)
    if release is None:
        return 0
    order = {str(tag): i for i, tag in enumerate(sys_tags())}
    best: tuple[int, int] | None = None
    for file, (_sha, size) in release.files.items():
        if not file.endswith(".whl"):
            continue
        ranks = [order[str(t)] for t in parse_wheel_filename(file)[3] if str(t) in order]
        if ranks and (best is None or min(ranks) < best[0]):
            best = (min(ranks), size)
    return best[1] if best else max((s for _sha, s in release.files.values()), default=0)


def _disk(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def summary(lines: list[dict[str, Any]]) -> dict[str, Any]:
    """Distinct wheels and overlay packages, their download size cold, and the disk the
    unpacked wheels (with their bytecode) and the overlays take."""
    from sglang_shims.testing import wheels as cache

    wheels = {(e["dist"].lower(), e["version"]): e["size"] for e in lines if e["kind"] == "wheel"}
    unpacked = {(e["dist"].lower(), e["version"]) for e in lines
                if e["kind"] == "wheel" and e.get("unpacked")}
    root = cache.cache_dir()
    disk = sum(_disk(root / "unpacked" / f"{cache._normalise(d)}-{v}") for d, v in unpacked)
    overlays = {e["overlay"] for e in lines if e["kind"] == "overlay"}
    disk += sum(_disk(root / "matrix" / name) for name in overlays)
    packages = sorted({p for e in lines if e["kind"] == "overlay" for p in e["packages"]})
    overlay_bytes = {p: _served_size(p) for p in packages}
    largest = [(s, f"{d}=={v}") for (d, v), s in wheels.items()]
    largest += [(s, p) for p, s in overlay_bytes.items()]
    first: dict[tuple[str, str], str] = {}  # the test file that fetched each wheel first
    for e in lines:
        if e["kind"] == "wheel":
            first.setdefault((e["dist"].lower(), e["version"]), e.get("test", "").split("::")[0])
    by_file: dict[str, int] = {}
    for key, where in first.items():
        by_file[where] = by_file.get(where, 0) + wheels[key]
    return {"wheels": len(wheels), "wheel_bytes": sum(wheels.values()),
            "by_file": sorted(((s, f or "?") for f, s in by_file.items()), reverse=True),
            "overlay_packages": len(packages), "overlay_bytes": sum(overlay_bytes.values()),
            "overlays": sorted(overlays), "disk_bytes": disk,
            "largest": sorted(largest, reverse=True)[:12]}


def main(argv: list[str]) -> int:
    lines = [json.loads(line) for line in Path(argv[0]).read_text(encoding="utf-8").splitlines()
             if line.strip()]
    found = summary(lines)
    total = found["wheel_bytes"] + found["overlay_bytes"]
    print(f"wheels: {found['wheels']} ({found['wheel_bytes'] / 1e6:.0f} MB); overlay packages:"
          f" {found['overlay_packages']} ({found['overlay_bytes'] / 1e6:.0f} MB) in"
          f" {', '.join(found['overlays']) or 'no overlay'}; cold download"
          f" {total / 1e6:.0f} MB; on disk once unpacked {found['disk_bytes'] / 1e9:.2f} GB")
    for size, what in found["largest"]:
        print(f"  {size / 1e6:8.1f} MB  {what}")
    print("wheels by the test file that fetched them first:")
    for size, where in found["by_file"]:
        print(f"  {size / 1e6:8.1f} MB  {where}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
