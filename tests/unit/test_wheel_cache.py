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
    assert (dest / ".compiled").is_file()
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
    assert wheels.not_served(error) is not served
