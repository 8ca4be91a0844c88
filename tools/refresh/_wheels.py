"""Published kernel versions and their x86_64 wheels, through pip alone.

The version list comes from the package index (``pip index versions``), so a release the
git clone does not have yet is still found.  A wheel is downloaded with ``pip download
--no-deps`` into a temporary folder (each is 300-600 MB), its ``sgl_kernel/**.py`` files
are read from the zip and never imported, and its sha256 is recorded so that a later
``--check`` can tell whether a cached copy is the file this data was read from.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from . import pypi
from ._pysurface import PACKAGE

__all__ = ["pypi"]

# Any x86_64 Linux wheel will do: the .py files are the same in every build of a release.
# pip matches an explicit --platform exactly, so each manylinux spelling is listed; a
# recent Python accepts the older abi3 tags (cp39-abi3, cp310-abi3).
TARGET = ("--platform", "manylinux2014_x86_64", "--platform", "manylinux_2_17_x86_64",
          "--platform", "manylinux_2_28_x86_64", "--python-version", "3.12",
          "--implementation", "cp", "--abi", "abi3", "--abi", "cp312", "--only-binary=:all:")


@dataclass(frozen=True)
class Wheel:
    """The wheel a version was read from: its file name and sha256."""

    file: str
    sha256: str


def _pip(*args: str) -> str:
    result = subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check",
                             *args], capture_output=True, text=True, check=False)
    if result.returncode:
        raise RuntimeError(f"pip {' '.join(args[:2])} failed: {result.stderr.strip()[-800:]}")
    return result.stdout


def x86_64(dist: str, index: str = pypi.PYPI) -> dict[str, dict[str, tuple[str, int]]]:
    """{version: {file: (sha256, size)}} of the x86_64 Linux wheels TARGET accepts, for
    every version of ``dist`` that has one, oldest first (read from the simple API, which
    also says whether a file read before is still the one served)."""
    out = {}
    for version, release in pypi.listing(dist, index).items():
        files = {f: v for f, v in release.files.items() if _x86_64(f)}
        if files:
            out[version] = files
    return out


def _x86_64(filename: str) -> bool:
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename

    try:
        tags = parse_wheel_filename(filename)[3]
    except InvalidWheelFilename:
        return False
    return any(t.platform.endswith("x86_64") and t.platform.startswith("manylinux")
               and (t.abi == "abi3" or t.interpreter == "cp312") for t in tags)


def published(dist: str) -> list[str]:
    """Every version of ``dist`` that the index has an x86_64 wheel for."""
    versions: list[str] = json.loads(_pip("index", "versions", dist, "--json", "--pre",
                                          *TARGET))["versions"]
    return versions


sha256 = pypi.sha256


def package_files(path: Path) -> dict[str, str]:
    """``{path inside sgl_kernel/: source}`` of the wheel's ``.py`` files."""
    prefix = PACKAGE + "/"
    with zipfile.ZipFile(path) as wheel:
        return {name[len(prefix):]: wheel.read(name).decode("utf-8")
                for name in wheel.namelist()
                if name.startswith(prefix) and name.endswith(".py")}


def read(dist: str, version: str, cache: Path | None) -> tuple[Wheel, dict[str, str]]:
    """The wheel of ``dist==version`` and its package files: from ``cache`` when it holds
    a wheel of that version, else downloaded into a temporary folder and deleted."""
    name = dist.replace("-", "_") + f"-{version}-"
    cached = sorted(p for p in cache.glob(f"{name}*x86_64.whl")) if cache else []
    if cached:
        return Wheel(cached[0].name, sha256(cached[0])), package_files(cached[0])
    with tempfile.TemporaryDirectory(prefix="kernel-wheel-") as folder:
        _pip("download", "--no-deps", "-q", *TARGET, "-d", folder, f"{dist}=={version}")
        got = sorted(Path(folder).glob("*.whl"))
        if len(got) != 1:
            raise RuntimeError(f"pip download {dist}=={version} gave {[p.name for p in got]}")
        return Wheel(got[0].name, sha256(got[0])), package_files(got[0])
