"""Real published wheels (sglang is pure Python up to 0.5.10, ~2-5 MB), fetched once.

Patches are tested against the exact code users run, so tests download the
published wheels instead of vendoring copies.  The cache lives in
``$SGLANG_SHIMS_WHEEL_CACHE`` (default ``~/.cache/sglang-shims/wheels``); a wheel
is downloaded at most once per cache and unpacked at most once per version.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path


def cache_dir() -> Path:
    default = Path.home() / ".cache" / "sglang-shims" / "wheels"
    path = Path(os.environ.get("SGLANG_SHIMS_WHEEL_CACHE") or default)
    path.mkdir(parents=True, exist_ok=True)
    return path


def _normalise(dist: str) -> str:
    return re.sub(r"[-_.]+", "_", dist).lower()


def find_cached(dist: str, version: str, cache: Path | None = None) -> Path | None:
    cache = cache or cache_dir()
    prefix = f"{_normalise(dist)}-{version}-"
    hits = sorted(p for p in cache.glob("*.whl") if p.name.lower().startswith(prefix))
    return hits[0] if hits else None


def fetch(dist: str, version: str, cache: Path | None = None) -> Path:
    """Return the path of ``dist==version``'s wheel, downloading it if needed."""
    cache = cache or cache_dir()
    found = find_cached(dist, version, cache)
    if found:
        return found
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
           "--disable-pip-version-check", "-q", "-d", str(cache), f"{dist}=={version}"]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
    found = find_cached(dist, version, cache)
    if result.returncode != 0 or found is None:
        raise RuntimeError(f"cannot download {dist}=={version}: {result.stderr.strip()[-800:]}")
    return found


def unpack(dist: str, version: str, cache: Path | None = None) -> Path:
    """Unpack the wheel once; the folder works as a ``PYTHONPATH`` entry (dist-info
    included, so ``importlib.metadata`` reports the version)."""
    cache = cache or cache_dir()
    dest = cache / "unpacked" / f"{_normalise(dist)}-{version}"
    marker = dest / ".complete"
    if marker.exists():
        return dest
    wheel = fetch(dist, version, cache)
    tmp = dest.with_name(dest.name + f".tmp{os.getpid()}")
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(tmp)
    if dest.exists():
        import shutil

        shutil.rmtree(dest)
    tmp.rename(dest)
    marker.write_text(wheel.name, encoding="utf-8")
    return dest
