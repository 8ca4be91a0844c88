"""Kernel versions and their sources in a clone of sglang, read with plain ``git``.

sgl-kernel is built from sglang's own repository: first ``sgl-kernel/``, from mid-2026
``python/sglang/kernels/aot/``.  Either way its ``pyproject.toml`` declares the version
(``[project] name`` is ``sgl-kernel`` or, from 0.4.0, ``sglang-kernel``) and the import
package sits in ``python/sgl_kernel/`` beside it.  A version's *bump commit* is the first
commit, oldest first along the ref's history, whose kernel ``pyproject.toml`` carries that
version; the package as of that commit is what the version shipped.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

DISTRIBUTIONS = frozenset({"sgl-kernel", "sglang-kernel"})
PACKAGE_DIR = "python/sgl_kernel/"
PYPROJECT = "pyproject.toml"


@dataclass(frozen=True)
class Bump:
    """``version`` first declared at ``commit`` by ``root``/pyproject.toml (root ends in
    ``/``, or is empty for the repository root)."""

    version: str
    commit: str
    root: str


def _git(git_dir: Path, *args: str) -> str:
    return subprocess.run(["git", f"--git-dir={git_dir}", *args], capture_output=True,
                          text=True, check=True).stdout


def _blobs(git_dir: Path, specs: Iterable[str]) -> Iterator[tuple[str, str | None]]:
    """(spec, text or None when missing) for each ``rev:path`` spec, through one
    ``git cat-file --batch`` process."""
    wanted = list(specs)
    if not wanted:
        return
    proc = subprocess.run(["git", f"--git-dir={git_dir}", "cat-file", "--batch"],
                          input="".join(f"{s}\n" for s in wanted).encode(),
                          capture_output=True, check=True)
    out, at = proc.stdout, 0
    for spec in wanted:
        end = out.index(b"\n", at)
        header = out[at:end].split()
        at = end + 1
        if header[-1] == b"missing" or header[1] != b"blob":
            yield spec, None
            continue
        size = int(header[2])
        yield spec, out[at:at + size].decode("utf-8")
        at += size + 1


def project_fields(text: str) -> dict[str, str]:
    """``name`` and ``version`` of a pyproject's ``[project]`` table.

    Read line by line, not with a TOML parser: the two keys are always plain
    ``key = "value"`` lines, and the commit that bumped 0.0.5 (#4377) wrote
    ``version = "0.0.5`` without its closing quote (fixed eight minutes later): it is
    still the commit the version was bumped in, so a missing closing quote is accepted.
    """
    fields: dict[str, str] = {}
    table = ""
    for line in text.splitlines():
        header = re.match(r"\s*\[([^\[\]]+)\]\s*(#.*)?$", line)
        if header:
            table = header.group(1).strip()
            continue
        match = re.match(r"\s*(name|version)\s*=\s*[\"']([^\"'\s]+)", line)
        if table == "project" and match:
            fields.setdefault(match.group(1), match.group(2))
    return fields


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def bumps(git_dir: Path, ref: str) -> list[Bump]:
    """Every kernel version declared along ``ref``, at its bump commit, oldest first."""
    log = _git(git_dir, "log", "--reverse", "--topo-order", "--no-renames",
               "--format=%x00%H", "--name-only", ref, "--", PYPROJECT,
               f":(glob)**/{PYPROJECT}")
    changes: list[tuple[str, str]] = []
    for record in log.split("\0")[1:]:
        commit, *paths = record.split()
        changes += [(commit, p) for p in paths if p.rpartition("/")[2] == PYPROJECT]
    found: dict[str, Bump] = {}
    texts = dict(_blobs(git_dir, (f"{c}:{p}" for c, p in changes)))
    for commit, path in changes:
        text = texts[f"{commit}:{path}"]
        fields = project_fields(text) if text is not None else {}
        version = fields.get("version")
        if _normalise(fields.get("name", "")) in DISTRIBUTIONS and version:
            found.setdefault(version, Bump(version, commit, path[: -len(PYPROJECT)]))
    return list(found.values())


def head(git_dir: Path, ref: str) -> str:
    """The full commit id ``ref`` names."""
    return _git(git_dir, "rev-parse", "--verify", f"{ref}^{{commit}}").strip()


def package_files(git_dir: Path, commit: str, folder: str) -> dict[str, str] | None:
    """``{path inside the folder: source}`` of the ``.py`` files of ``folder`` (ending in
    ``/``) at ``commit``, or None when it holds no ``__init__.py`` there."""
    listing = _git(git_dir, "ls-tree", "-r", "-z", "--name-only", commit, "--", folder)
    paths = [p for p in listing.split("\0") if p.endswith(".py")]
    if folder + "__init__.py" not in paths:
        return None
    files: dict[str, str] = {}
    for spec, text in _blobs(git_dir, (f"{commit}:{p}" for p in paths)):
        if text is not None:
            files[spec.partition(":")[2][len(folder):]] = text
    return files
