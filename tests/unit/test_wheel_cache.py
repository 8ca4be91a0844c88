"""Unpacked wheels are byte-compiled once, in place, naming the folder they end up in.

The tests' subprocesses do not write bytecode (``PYTHONDONTWRITEBYTECODE=1``), so without
this every subprocess recompiled what it imported from an unpacked sglang or transformers.
"""

from __future__ import annotations

import importlib.util
import marshal
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from sglang_shims.testing import wheels

MODULE = "def boom():\n    raise ValueError('from the unpacked wheel')\n"


def _wheel(cache: Path) -> None:
    """A one-module wheel where ``fetch`` finds it, so nothing is downloaded."""
    cache.mkdir(mode=0o700)
    with zipfile.ZipFile(cache / "tinypkg-1.0-py3-none-any.whl", "w") as archive:
        archive.writestr("tinypkg/__init__.py", "")
        archive.writestr("tinypkg/mod.py", MODULE)
        archive.writestr("tinypkg/bad.py", "def broken(:\n")  # another release's syntax
        archive.writestr("tinypkg-1.0.dist-info/METADATA",
                         "Metadata-Version: 2.1\nName: tinypkg\nVersion: 1.0\n")


def _code_filename(source: Path) -> str:
    """The file name recorded in the bytecode Python will read for ``source``."""
    data = Path(importlib.util.cache_from_source(str(source))).read_bytes()
    return str(marshal.loads(data[16:]).co_filename)


def test_unpack_compiles_with_the_final_path(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    _wheel(cache)
    dest = wheels.unpack("tinypkg", "1.0", cache)
    source = dest / "tinypkg" / "mod.py"
    assert (dest / ".compiled").read_text(encoding="utf-8") == sys.implementation.cache_tag
    # compiled in a private folder, then renamed: the code names where it lives now
    assert _code_filename(source) == str(source)
    assert not Path(importlib.util.cache_from_source(str(dest / "tinypkg" / "bad.py"))).exists()
    # a subprocess that writes no bytecode reads it, and its traceback names the real file
    run = subprocess.run(
        [sys.executable, "-c", "import tinypkg.mod as m; print(m.__cached__); m.boom()"],
        env={"PYTHONPATH": str(dest), "PYTHONDONTWRITEBYTECODE": "1"},
        capture_output=True, text=True, check=False)
    assert f'File "{source}", line 2' in run.stderr, run.stderr
    assert "from the unpacked wheel" in run.stderr


def test_a_folder_unpacked_before_is_compiled_once(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    _wheel(cache)
    dest = wheels.unpack("tinypkg", "1.0", cache)
    pyc = Path(importlib.util.cache_from_source(str(dest / "tinypkg" / "mod.py")))
    # as a cache filled before compiling existed: complete, no bytecode, no mark
    pyc.unlink()
    (dest / ".compiled").unlink()
    assert wheels.unpack("tinypkg", "1.0", cache) == dest
    assert pyc.is_file() and _code_filename(dest / "tinypkg" / "mod.py") == str(
        dest / "tinypkg" / "mod.py")
    # the mark says it is done: a later call compiles nothing again
    pyc.unlink()
    wheels.unpack("tinypkg", "1.0", cache)
    assert not pyc.exists()


@pytest.mark.parametrize(("error", "served"), [
    ("ERROR: HTTP error 503 while getting https://files.pythonhosted.org/x.whl", False),
    ("pip._vendor.urllib3.exceptions.ReadTimeoutError: Read timed out.", False),
    ("error: Failed to download `regex==2026.12.2`", False),
    ("ERROR: No matching distribution found for sglang==9.9", True),
    ("ERROR: Could not find a version that satisfies the requirement", True),
])
def test_a_file_the_index_did_not_serve_is_told_from_a_missing_release(
        error: str, served: bool) -> None:
    assert wheels.not_served(error) is (not served)


def test_a_crashed_unpack_is_replaced(tmp_path: Path) -> None:
    """A folder without the complete mark (a crash left it) gives way to a fresh unpack."""
    cache = tmp_path / "cache"
    _wheel(cache)
    leftover = cache / "unpacked" / "tinypkg-1.0"
    leftover.mkdir(parents=True)
    (leftover / "half-written").write_text("")
    assert wheels.unpack("tinypkg", "1.0", cache) == leftover
    assert not (leftover / "half-written").exists()
    assert (leftover / ".complete").is_file() and (leftover / "tinypkg" / "mod.py").is_file()


def test_a_download_lands_in_the_cache_or_says_why_not(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """pip downloads into a private folder (``-d``); the wheel then moves into the cache.  A
    run that fails, or that leaves no wheel, raises: NotServed when the index failed."""
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    answers: list[tuple[int, str, bool]] = []

    def pip(cmd: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        code, stderr, writes = answers.pop(0)
        if writes:
            folder = Path(cmd[cmd.index("-d") + 1])
            (folder / "tinypkg-1.0-py3-none-any.whl").write_bytes(b"a wheel")
        return subprocess.CompletedProcess(cmd, code, "", stderr)

    monkeypatch.setattr(wheels.subprocess, "run", pip)
    answers.append((0, "", True))
    got = wheels.fetch("tinypkg", "1.0", cache)
    assert got == cache / "tinypkg-1.0-py3-none-any.whl" and got.read_bytes() == b"a wheel"
    answers.append((0, "", False))
    with pytest.raises(RuntimeError, match=r"cannot download tinypkg==2\.0") as raised:
        wheels.fetch("tinypkg", "2.0", cache)
    assert not isinstance(raised.value, wheels.NotServed)
    answers.append((1, "ERROR: HTTP error 503 while getting x.whl", False))
    with pytest.raises(wheels.NotServed):
        wheels.fetch("tinypkg", "2.0", cache)
    assert list(cache.iterdir()) == [got]  # no private folder left behind


def test_a_wheel_cache_others_can_write_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    private = tmp_path / "private"
    monkeypatch.setenv("SGLANG_SHIMS_WHEEL_CACHE", str(private))
    assert wheels.cache_dir() == private and private.stat().st_mode & 0o777 == 0o700
    private.chmod(0o777)
    with pytest.raises(RuntimeError, match="refused"):
        wheels.cache_dir()
