"""A few files of a published wheel, read without downloading the whole wheel.

Some wheels a test needs one file of are large (vllm: ~200 MB for a Python module of
2 KB).  A wheel is a zip archive whose directory sits at its end, and the package index
serves byte ranges, so the archive's directory and then only the wanted members are
fetched, over HTTPS from the index the wheel is listed on (PEP 691 JSON).  The files are
kept in the wheel cache under ``members/<dist>-<version>/``, laid out as in the wheel, a
folder that works as a ``PYTHONPATH`` entry for reading sources.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import urllib.request
import zipfile
from pathlib import Path

from .wheels import NotServed, cache_dir

INDEX = "https://pypi.org/simple"
TIMEOUT = 60


class _RangeFile(io.RawIOBase):
    """The remote file as a seekable, read-only stream: each read is one Range request."""

    def __init__(self, url: str) -> None:
        self.url, self.pos = url, 0
        request = urllib.request.Request(url, method="HEAD")
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            self.size = int(response.headers["Content-Length"])

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.pos, io.SEEK_END: self.size}[whence]
        self.pos = base + offset
        return self.pos

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        count = min(len(buffer), self.size - self.pos)
        if count <= 0:
            return 0
        request = urllib.request.Request(
            self.url, headers={"Range": f"bytes={self.pos}-{self.pos + count - 1}"})
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            data = response.read()
        buffer[:len(data)] = data
        self.pos += len(data)
        return len(data)


def wheel_url(dist: str, version: str, index: str = INDEX) -> str:
    """The URL of one wheel of ``dist==version`` (any platform: its Python files are the
    same in each), from the index's PEP 691 JSON page."""
    name = re.sub(r"[-_.]+", "-", dist).lower()
    request = urllib.request.Request(f"{index}/{name}/",
                                     headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
        files = json.load(response)["files"]
    prefix = f"{re.sub(r'[-_.]+', '_', dist).lower()}-{version}-"
    wheels = sorted(f["url"] for f in files if f["filename"].lower().startswith(prefix)
                    and f["filename"].endswith(".whl") and not f.get("yanked"))
    if not wheels:
        raise RuntimeError(f"the index lists no wheel of {dist}=={version}")
    return str(wheels[0])


def members(dist: str, version: str, names: tuple[str, ...], cache: Path | None = None
            ) -> Path:
    """The folder holding those of ``names`` (paths inside the wheel) that the wheel has;
    fetched once per cache.  :class:`NotServed` when the index cannot be reached.

    Callers asking for different files of the same wheel share its folder: a request for a
    name not fetched yet fetches it together with every name fetched before, so the folder
    only grows and no caller's files disappear under another's request."""
    cache = cache or cache_dir()
    dest = cache / "members" / f"{re.sub(r'[-_.]+', '_', dist).lower()}-{version}"
    marker = dest / ".complete"
    fetched = set(marker.read_text(encoding="utf-8").split()) if marker.exists() else set()
    if set(names) <= fetched:
        return dest
    wanted = sorted(fetched | set(names))
    tmp = dest.with_name(f"{dest.name}.tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        stream = io.BufferedReader(_RangeFile(wheel_url(dist, version)), buffer_size=1 << 16)
        with zipfile.ZipFile(stream) as archive:
            listed = set(archive.namelist())
            for name in wanted:
                if name in listed:
                    archive.extract(name, tmp)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise NotServed(f"cannot read {dist}=={version} from the index: {exc}") from exc
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / ".complete").write_text(" ".join(wanted), encoding="utf-8")
    shutil.rmtree(dest, ignore_errors=True)
    tmp.rename(dest)
    return dest
