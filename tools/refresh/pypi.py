"""What a package index lists: versions, their files and when they appeared.

Only the refresh and the canary ask an index; the tests read what they recorded.  Two
kinds of index answer here:

* a PEP 691 JSON simple index (PyPI: ``https://pypi.org/simple``), which gives every
  file's name, sha256, size and upload time;
* a local folder of wheels (``--index-url /path`` or ``file:///path``), as
  ``pip --find-links`` reads one: the version comes from each file name and the date from
  its modification time.  The maintainer's walkthrough test serves a fabricated release
  this way, without the network.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import Version

PYPI = "https://pypi.org/simple"


@dataclass
class Release:
    """One version of a project on the index: its files ``{name: (sha256, size)}`` and
    the date its first file was uploaded (``YYYY-MM-DD``)."""

    version: str
    uploaded: str = ""
    files: dict[str, tuple[str, int]] = field(default_factory=dict)
    yanked: bool = False

    @property
    def wheels(self) -> list[str]:
        return sorted(f for f in self.files if f.endswith(".whl"))


def _version_of(filename: str) -> str | None:
    try:
        if filename.endswith(".whl"):
            return str(parse_wheel_filename(filename)[1])
        return str(parse_sdist_filename(filename)[1])
    except (InvalidWheelFilename, InvalidSdistFilename, ValueError):
        return None


def _local_folder(index: str) -> Path | None:
    if index.startswith("file://"):
        return Path(urllib.parse.unquote(urllib.parse.urlparse(index).path))
    return Path(index) if "://" not in index else None


def sha256(path: Path) -> str:
    """The sha256 of a file, read in blocks (wheels are hundreds of MB)."""
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _from_folder(folder: Path, project: str) -> dict[str, Release]:
    prefix = canonicalize_name(project).replace("-", "_")
    out: dict[str, Release] = {}
    for path in sorted(folder.iterdir()):
        if canonicalize_name(path.name.split("-")[0]).replace("-", "_") != prefix:
            continue
        version = _version_of(path.name)
        if version is None:
            continue
        day = datetime.datetime.fromtimestamp(path.stat().st_mtime, datetime.timezone.utc)
        release = out.setdefault(version, Release(version, day.date().isoformat()))
        release.uploaded = min(release.uploaded, day.date().isoformat())
        release.files[path.name] = (sha256(path), path.stat().st_size)
    return out


def _from_json(index: str, project: str) -> dict[str, Release]:
    url = f"{index.rstrip('/')}/{canonicalize_name(project)}/"
    request = urllib.request.Request(url, headers={
        "Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(request, timeout=120) as response:
        data = json.load(response)
    out: dict[str, Release] = {}
    for entry in data["files"]:
        version = _version_of(entry["filename"])
        if version is None:
            continue
        day = str(entry.get("upload-time") or "")[:10]
        release = out.setdefault(version, Release(version, day))
        release.uploaded = min(release.uploaded, day) if release.uploaded else day
        release.files[entry["filename"]] = (entry.get("hashes", {}).get("sha256", ""),
                                            int(entry.get("size") or 0))
        release.yanked = release.yanked or bool(entry.get("yanked"))
    return out


def listing(project: str, index: str = PYPI) -> dict[str, Release]:
    """Every version of ``project`` the index has a file for, in version order."""
    folder = _local_folder(index)
    found = _from_folder(folder, project) if folder is not None else _from_json(index, project)
    return {v: found[v] for v in sorted(found, key=Version)}


def is_final(version: str) -> bool:
    """A release a user gets from ``pip install -U`` (no pre-, dev- or local version)."""
    parsed = Version(version)
    return not (parsed.is_prerelease or parsed.is_devrelease or parsed.local)
