"""Real published wheels (sglang is pure Python up to 0.5.10, ~2-5 MB), fetched once.

Patches are tested against the exact code users run, so tests download the
published wheels instead of vendoring copies.  The cache lives in
``$SGLANG_SHIMS_WHEEL_CACHE`` (default ``$XDG_CACHE_HOME/sglang-shims/wheels``, where
``XDG_CACHE_HOME`` defaults to ``~/.cache``); a wheel is downloaded at most once per
cache and unpacked at most once per version.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path


class NotServed(RuntimeError):
    """The index did not serve a file it lists (an HTTP error, a timeout, a file still
    propagating to its mirrors): a fact about the index at that hour, not about the code
    under test.  The test fixtures skip on it, with a reason CI accepts."""


_NOT_SERVED = re.compile(
    r"HTTP error \d+|HTTPError|Read timed out|timed out|Connection(Error| refused| reset|"
    r" aborted)|Failed to (download|fetch)|error sending request|Temporary failure in name"
    r" resolution|Max retries exceeded|Name or service not known|Network is unreachable|"
    r"do not match the hashes|hash mismatch", re.IGNORECASE)


def not_served(error: str) -> bool:
    """Does a pip or uv failure say the index could not serve a file (see NotServed)?"""
    return bool(_NOT_SERVED.search(error))


def cache_path() -> Path:
    """Where the wheel cache is (``SGLANG_SHIMS_WHEEL_CACHE``, else the user's cache folder),
    neither made nor checked: :func:`cache_dir` does both."""
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".cache"
    return Path(os.environ.get("SGLANG_SHIMS_WHEEL_CACHE") or base / "sglang-shims" / "wheels")


def cache_dir() -> Path:
    """The wheel cache, made 0700 when missing; refused when another user could write it.

    Tests put what is unpacked here on ``PYTHONPATH`` and run it (as root, on CI), so the
    folder and every folder above it follow the rule for patch folders
    (:func:`sglang_shims._trust.chain_problem`).
    """
    from .. import _trust

    path = cache_path()
    if not path.exists():
        os.close(_trust.open_folder(path))  # made 0700, parents too
    problem = _trust.chain_problem(path)
    if problem:
        raise RuntimeError(f"wheel cache {path} refused: {problem} (set SGLANG_SHIMS_WHEEL_CACHE"
                           " to a folder only you can write)")
    return path


def _normalise(dist: str) -> str:
    return re.sub(r"[-_.]+", "_", dist).lower()


def find_cached(dist: str, version: str, cache: Path | None = None) -> Path | None:
    cache = cache or cache_dir()
    prefix = f"{_normalise(dist)}-{version}-"
    hits = sorted(p for p in cache.glob("*.whl") if p.name.lower().startswith(prefix))
    return hits[0] if hits else None


def fetch(dist: str, version: str, cache: Path | None = None,
          pip_args: tuple[str, ...] = ()) -> Path:
    """Return the path of ``dist==version``'s wheel, downloading it if needed.

    ``pip_args`` go to ``pip download`` (e.g. ``--python-version 3.12 --platform ...`` for
    a release published only for another interpreter, whose Python files are read here).

    pip downloads into a private folder and the wheel is then renamed into the cache,
    so a test process running beside this one (pytest-xdist) never reads half a file.
    """
    import tempfile

    cache = cache or cache_dir()
    found = find_cached(dist, version, cache)
    if found:
        return found
    with tempfile.TemporaryDirectory(dir=cache, prefix=".download-") as private:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               "--disable-pip-version-check", "-q", *pip_args, "-d", private,
               f"{dist}=={version}"]
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=600,
                                check=False)
        got = find_cached(dist, version, Path(private))
        if result.returncode != 0 or got is None:
            error = RuntimeError if not not_served(result.stderr) else NotServed
            raise error(f"cannot download {dist}=={version}: {result.stderr.strip()[-800:]}")
        target = cache / got.name
        if not target.exists():  # else another process finished first: keep theirs
            got.replace(target)
    found = find_cached(dist, version, cache)
    assert found is not None
    return found


def unpack(dist: str, version: str, cache: Path | None = None,
           pip_args: tuple[str, ...] = ()) -> Path:
    """Unpack the wheel once; the folder works as a ``PYTHONPATH`` entry (dist-info
    included, so ``importlib.metadata`` reports the version).

    The wheel is extracted into a private folder, marked complete there, and renamed
    into place in one step; a process that loses that race uses the winner's folder.
    A folder without the mark (left by a crash) is replaced.
    """
    import shutil

    cache = cache or cache_dir()
    dest = cache / "unpacked" / f"{_normalise(dist)}-{version}"
    marker = dest / ".complete"
    if marker.exists():
        compile_tree(dest)  # a folder unpacked before folders were compiled
        return dest
    wheel = fetch(dist, version, cache, pip_args)
    tmp = dest.with_name(f"{dest.name}.tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(tmp)
    compile_tree(tmp, shown_as=dest)
    (tmp / ".complete").write_text(wheel.name, encoding="utf-8")
    try:
        tmp.rename(dest)
    except OSError:  # dest exists: complete (a concurrent winner) or a crash's leftover
        if marker.exists():
            shutil.rmtree(tmp, ignore_errors=True)
            return dest
        shutil.rmtree(dest, ignore_errors=True)
        tmp.rename(dest)
    return dest


def compile_tree(folder: Path, shown_as: Path | None = None) -> None:
    """Byte-compile every module under ``folder``, once (a ``.compiled`` mark records it).

    Why: the tests' subprocesses run with ``PYTHONDONTWRITEBYTECODE=1``, so that nothing a
    test writes for itself is ever served from a stale cache; but Python then also
    recompiled, in every subprocess, whatever it imported from an unpacked wheel (sglang, a
    second transformers).  It still *reads* bytecode that exists, so compiling these cached
    folders once removes that cost from every later import (the serving-graph and Gemma-3n
    tests on a 2-core machine: 122 s before, 84 s after).  ``shown_as`` is the path the
    folder will have once renamed into place: the code objects (and so tracebacks) name
    that path, not the private one it was compiled in.  Files that do not compile on this
    interpreter (another release's syntax) are left to fail at import as they would anyway.
    """
    import compileall
    import warnings

    done = folder / ".compiled"
    if done.exists():
        return
    with warnings.catch_warnings():  # invalid escape sequences and the like: not ours
        warnings.simplefilter("ignore")
        compileall.compile_dir(folder, ddir=shown_as, quiet=2, workers=1)
    done.write_text(sys.implementation.cache_tag or "", encoding="utf-8")
