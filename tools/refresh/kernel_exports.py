"""Rebuild ``sgl_kernel_exports.json``: the names every sgl-kernel release exports.

The stand-in kernel, the fallback provider's proxies and the hybrid routing all answer
"does kernel X have name Y" from this file, so it must say where each answer came from
and be rebuildable.  A maintainer rebuilds it (network and a clone of sglang needed)::

    python -m tools.refresh.kernel_exports --git PATH/TO/sglang.git [--wheel-cache DIR]

and CI checks the committed copy offline::

    python -m tools.refresh.kernel_exports --check

Versions: every release the package index has (``sgl-kernel``, renamed ``sglang-kernel``
at 0.4.0), read from its published x86_64 wheel (``wheel``), and every other version
bumped along sglang's ``main`` since the package moved to ``python/sgl_kernel/`` (0.0.4),
read at its bump commit (``commit``): releases the index no longer has (0.0.x) and bumps
reverted before a release (0.3.6, 0.3.21.post1), so that a pin on any of them finds its
surface.  The wheel wins wherever there is one because a bump commit is not always what
was released: the 0.4.0 wheel was built four days before its bump commit, from a tree
that still had 23 names the bump commit had dropped.  ``_pysurface`` says what counts as
a name.  A rebuild downloads every wheel once (about 30 GB, 10 minutes on a fast link);
``--wheel-cache`` names a folder of wheels to use first.

``generated_by`` records the inputs: the commit and folder each version was read from,
each wheel's file name and sha256, the versions the index listed.  ``--check`` verifies
the file against them without the network; given ``--git`` and ``--wheel-cache`` it
also re-reads every input it can find locally and compares.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

from . import _compare, _gitsource, _wheels
from ._pysurface import Surface, surface

GENERATOR = 1
DISTRIBUTIONS = ("sgl-kernel", "sglang-kernel")
REPO = Path(__file__).resolve().parents[2]
SOURCE = (
    "For each sgl-kernel / sglang-kernel version on the package index, and each other"
    " version bumped along sglang's main branch since the package moved to"
    " python/sgl_kernel/ (0.0.4): 'exports' = the names sgl_kernel/__init__.py imports from"
    " the package itself or defines ('*sgl_kernel.x' marks a star import of submodule x),"
    " 'submodules' = the top-level names each other module binds (imports, definitions,"
    " assignments; dunder names left out), both read with ast; every branch of"
    " if/try/with counts, so platform-conditional names are present, while `if"
    " TYPE_CHECKING` bodies bind nothing. Read from the published x86_64 wheel's .py files"
    " ('wheel') where the index has the version, else at its bump commit in sglang's git"
    " history ('commit'). generated_by lists the inputs; tools/refresh/kernel_exports.py"
    " rebuilds and checks this file."
)
_HEX = re.compile(r"[0-9a-f]+")


def default_output(root: Path = REPO) -> Path:
    """The full record: every version's names with the inputs they were read from."""
    return root / "tools" / "refresh" / "data" / "sgl_kernel_exports.json"


def _runs(present: list[int]) -> str:
    """Indexes as runs: ``"0-5 7 9-12"``."""
    out: list[str] = []
    for at in present:
        if out and int(out[-1].rpartition("-")[2]) == at - 1:
            out[-1] = f"{out[-1].partition('-')[0]}-{at}"
        else:
            out.append(str(at))
    return " ".join(out)


def compact(data: Mapping[str, Any]) -> str:
    """What the package ships (``sglang_shims.kernels.surface.exports`` reads it): each
    name once, with the runs of versions that have it; each version's commit and wheel.
    The inputs stay in the full record."""
    versions = data["versions"]
    order = list(versions)
    exports: dict[str, list[int]] = {}
    subs: dict[str, dict[str, list[int]]] = {}
    for at, version in enumerate(order):
        record = versions[version]
        for name in record["exports"]:
            exports.setdefault(name, []).append(at)
        for sub, names in record["submodules"].items():
            subs.setdefault(sub, {}).setdefault("", []).append(at)
            for name in names:
                subs[sub].setdefault(name, []).append(at)
    out = {
        "source": data["source"] + " Each name once, with the runs of indexes into"
                  " `versions` that have it; written by tools/refresh (kernel-exports-runtime)"
                  " from tools/refresh/data/sgl_kernel_exports.json.",
        "versions": {v: [versions[v]["commit"], versions[v].get("wheel")] for v in order},
        "exports": {n: _runs(exports[n]) for n in sorted(exports)},
        "submodules": {s: {n: _runs(subs[s][n]) for n in sorted(subs[s])} for s in sorted(subs)},
    }
    return json.dumps(out, separators=(",", ":"), ensure_ascii=False) + "\n"


def _by_version(mapping: Mapping[str, Any]) -> dict[str, Any]:
    return {v: mapping[v] for v in sorted(mapping, key=Version)}


def entry(found: Surface, *, commit: str | None = None, wheel: str | None = None
          ) -> dict[str, Any]:
    """One version's record; keys and lists sorted."""
    record: dict[str, Any] = {
        "commit": commit[:10] if commit else None,
        "exports": sorted(found.exports),
        "submodules": {k: sorted(found.submodules[k]) for k in sorted(found.submodules)},
    }
    if wheel:
        record["wheel"] = wheel
    return record


def assemble(versions: Mapping[str, dict[str, Any]], *, commits: Mapping[str, str],
             wheels: Mapping[str, _wheels.Wheel], index: Mapping[str, Iterable[str]],
             git: Mapping[str, str], date: str) -> dict[str, Any]:
    """The whole file as a dict, in its canonical order: keys sorted, version-keyed
    tables in version order."""
    return {
        "generated_by": {
            "command": "python -m tools.refresh.kernel_exports --git <clone of sglang>"
                       f" --ref {git['ref']}",
            "date": date,
            "generator": f"tools/refresh/kernel_exports.py v{GENERATOR}",
            "inputs": {
                "commits": _by_version(commits),
                "git": dict(sorted(git.items())),
                "index": {d: sorted(index[d], key=Version) for d in sorted(index)},
                "wheels": _by_version({v: {"file": w.file, "sha256": w.sha256}
                                       for v, w in wheels.items()}),
            },
        },
        "source": SOURCE,
        "versions": _by_version(versions),
    }


def render(data: Mapping[str, Any]) -> str:
    """The one serialisation: ``indent=1``, as the file always had (the runtime reads
    it; compact JSON would save a quarter of it but not its diffs' readability)."""
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


def _today() -> str:
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    when = (datetime.datetime.fromtimestamp(int(epoch), datetime.timezone.utc) if epoch
            else datetime.datetime.now(datetime.timezone.utc))
    return when.date().isoformat()


def _reusable(previous: Mapping[str, Any] | None, version: str,
              listed: Mapping[str, tuple[str, int]]) -> _wheels.Wheel | None:
    """The wheel ``previous`` read ``version`` from, if the index still serves that very
    file (same name, same sha256): its entry needs no download."""
    if not previous:
        return None
    recorded = previous["generated_by"]["inputs"]["wheels"].get(version)
    if recorded and listed.get(recorded["file"], ("",))[0] == recorded["sha256"]:
        return _wheels.Wheel(recorded["file"], recorded["sha256"])
    return None


def build(git_dir: Path | None, ref: str, repository: str, wheel_cache: Path | None,
          log: Callable[[str], None], previous: Mapping[str, Any] | None = None,
          index_url: str = _wheels.pypi.PYPI) -> dict[str, Any]:
    """Read every version from its source (network: the index and new wheels).

    With ``previous`` (the committed file) a version whose wheel the index still serves
    unchanged keeps its entry, and without ``git_dir`` the versions read from git keep
    theirs (a bump commit is history: it does not change), so a weekly refresh downloads
    only the wheels published since."""
    versions: dict[str, dict[str, Any]] = {}
    index: dict[str, list[str]] = {}
    wheels: dict[str, _wheels.Wheel] = {}
    for dist in DISTRIBUTIONS:
        listing = _wheels.x86_64(dist, index_url)
        index[dist] = list(listing)
        for version, files in listing.items():
            started = time.monotonic()
            kept = _reusable(previous, version, files)
            if kept is not None and previous is not None:
                versions[version], wheels[version] = previous["versions"][version], kept
                continue
            wheel, files_read = _wheels.read(dist, version, wheel_cache)
            versions[version] = entry(surface(files_read), wheel=wheel.file)
            wheels[version] = wheel
            log(f"{version}: {wheel.file} ({time.monotonic() - started:.0f} s)")
    commits: dict[str, str] = {}
    if git_dir is None:
        if previous is None:
            raise ValueError("without a git clone the versions read from git come from"
                             " the previous file: pass one")
        for version, spec in previous["generated_by"]["inputs"]["commits"].items():
            if version not in versions:
                versions[version] = previous["versions"][version]
                commits[version] = spec
        git = dict(previous["generated_by"]["inputs"]["git"])
    else:
        for bump in _gitsource.bumps(git_dir, ref):
            folder = bump.root + _gitsource.PACKAGE_DIR
            if bump.version in versions:
                continue
            tree = _gitsource.package_files(git_dir, bump.commit, folder)
            if tree is None:
                log(f"{bump.version}: no {folder} at {bump.commit[:10]} (older layout),"
                    " left out")
                continue
            versions[bump.version] = entry(surface(tree), commit=bump.commit)
            commits[bump.version] = f"{bump.commit}:{folder.rstrip('/')}"
            log(f"{bump.version}: not on the index, read at {bump.commit[:10]}")
        git = {"head": _gitsource.head(git_dir, ref), "ref": ref, "repository": repository}
    return assemble(versions, commits=commits, wheels=wheels, index=index, git=git,
                    date=_today())


def _star_ok(name: str, where: str, submodules: Mapping[str, Any]) -> bool:
    """A star import: in exports, of a submodule the entry lists (readers expand it from
    there); in a submodule, of any module."""
    module = name[1:]
    if not (name.startswith("*") and all(p.isidentifier() for p in module.split("."))):
        return False
    return where != "exports" or module.partition(".")[2] in submodules


def _entry_problems(version: str, record: Any, inputs: Mapping[str, Any]) -> list[str]:
    if not isinstance(record, dict):
        return [f"{version}: not an object"]
    out: list[str] = []
    keys = set(record)
    if keys - {"wheel"} != {"commit", "exports", "submodules"}:
        return [f"{version}: keys {sorted(keys)}"]
    commit, wheel = record["commit"], record.get("wheel")
    if commit is not None and not (isinstance(commit, str) and len(commit) == 10
                                   and _HEX.fullmatch(commit)):
        out.append(f"{version}: commit {commit!r} is not 10 hex digits")
    spec = inputs["commits"].get(version)
    recorded = inputs["wheels"].get(version)
    if spec is not None and not (commit and wheel is None
                                 and spec.partition(":")[0].startswith(commit)):
        out.append(f"{version}: commit {commit!r} / wheel {wheel!r} is not input {spec!r}")
    if recorded is not None and not (commit is None and wheel == recorded["file"]):
        out.append(f"{version}: commit {commit!r} / wheel {wheel!r} is not input"
                   f" {recorded['file']!r}")
    subs = record["submodules"]
    if not isinstance(subs, dict) or list(subs) != sorted(subs):
        return [*out, f"{version}: submodules not an object with sorted keys"]
    for where, names in [("exports", record["exports"]), *subs.items()]:
        if not (isinstance(names, list) and all(isinstance(n, str) for n in names)
                and names == sorted(set(names))):
            out.append(f"{version}: {where}: not a sorted list of distinct names")
            continue
        for name in names:
            if not (name.isidentifier() or _star_ok(name, where, subs)):
                out.append(f"{version}: {where}: bad name {name!r}")
    return out


def problems(text: str) -> list[str]:
    """Why ``text`` is not a well-formed file consistent with its recorded inputs."""
    try:
        data = json.loads(text)
        inputs = data["generated_by"]["inputs"]
        versions = data["versions"]
        commits, wheels, index = inputs["commits"], inputs["wheels"], inputs["index"]
        order = sorted(versions, key=Version)
    except (ValueError, KeyError, TypeError, InvalidVersion) as exc:
        return [f"not a generated exports file: {type(exc).__name__}: {exc}"]
    out: list[str] = []
    if set(data) != {"generated_by", "source", "versions"}:
        out.append(f"top-level keys {sorted(data)}")
    if list(versions) != order:
        out.append("versions are not in version order")
    if set(commits) & set(wheels):
        out.append(f"read from both git and a wheel: {sorted(set(commits) & set(wheels))}")
    read = set(commits) | set(wheels)
    if set(versions) != read:
        out.append(f"versions without inputs: {sorted(set(versions) - read)};"
                   f" inputs without versions: {sorted(read - set(versions))}")
    missing = sorted({v for vs in index.values() for v in vs} - set(versions))
    if missing:
        out.append(f"versions on the index but not in the file: {missing}")
    for version, spec in commits.items():
        sha, _, folder = spec.partition(":")
        if len(sha) != 40 or not _HEX.fullmatch(sha) or not folder:
            out.append(f"{version}: commit input {spec!r} is not <40 hex>:<folder>")
    for version, wheel in wheels.items():
        if f"-{version}-" not in wheel.get("file", "") or not (
                len(wheel.get("sha256", "")) == 64 and _HEX.fullmatch(wheel["sha256"])):
            out.append(f"{version}: wheel input {wheel!r} is not a file of that version"
                       " with its sha256")
    for version, record in versions.items():
        out += _entry_problems(version, record, inputs)
    if not out and render(data) != text:
        out.append("not in the canonical serialisation (render(json.loads(file)) differs)")
    return out


def reread(data: Mapping[str, Any], git_dir: Path | None, wheel_cache: Path | None
           ) -> tuple[list[str], int]:
    """Re-read the inputs found locally; (differences, how many inputs were re-read)."""
    inputs, versions = data["generated_by"]["inputs"], data["versions"]
    out: list[str] = []
    done = 0
    for version, spec in inputs["commits"].items():
        if git_dir is None:
            break
        sha, _, folder = spec.partition(":")
        files = _gitsource.package_files(git_dir, sha, folder + "/")
        if files is None:
            out.append(f"{version}: {spec} not in {git_dir}")
            continue
        fresh = entry(surface(files), commit=sha)
        out += [f"{version}: {c}" for c in _compare.version_changes(versions[version], fresh)]
        done += 1
    for version, wheel in inputs["wheels"].items():
        path = wheel_cache / wheel["file"] if wheel_cache else None
        if path is None or not path.is_file():
            continue
        if _wheels.sha256(path) != wheel["sha256"]:
            out.append(f"{version}: {path} is not the wheel the data was read from (sha256)")
        fresh = entry(surface(_wheels.package_files(path)), wheel=wheel["file"])
        out += [f"{version}: {c}" for c in _compare.version_changes(versions[version], fresh)]
        done += 1
    return out, done


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m tools.refresh.kernel_exports",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", type=Path, help="the data file (default: the one"
                        " sglang_shims/kernels/**/sgl_kernel_exports.json)")
    parser.add_argument("--check", action="store_true", help="verify the file offline"
                        " instead of rebuilding it")
    parser.add_argument("--git", type=Path, help="git directory of a clone of sglang"
                        " (a bare mirror will do); without it the versions read from git"
                        " are kept from the current file")
    parser.add_argument("--ref", default="main", help="the branch whose history is read"
                        " (default: main)")
    parser.add_argument("--repository", default="github:sgl-project/sglang",
                        help="what --git is a clone of, recorded in the inputs")
    parser.add_argument("--wheel-cache", type=Path, help="a folder of already downloaded"
                        " wheels to read before downloading")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    output: Path = args.output or default_output()

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    if args.check:
        text = output.read_text(encoding="utf-8")
        found = problems(text)
        reread_count = 0
        if not found and (args.git or args.wheel_cache):
            differences, reread_count = reread(json.loads(text), args.git, args.wheel_cache)
            found += differences
        for line in found:
            log(f"{output}: {line}")
        if not found:
            print(f"{output}: consistent with its recorded inputs"
                  + (f" ({reread_count} re-read)" if reread_count else ""))
        return 1 if found else 0
    started = time.monotonic()
    previous = json.loads(output.read_text(encoding="utf-8")) if output.exists() else None
    if not args.git and previous is None:
        _parser().error("a first build reads sglang's history: pass --git (or --check)")
    data = build(args.git, args.ref, args.repository, args.wheel_cache, log,
                 previous=previous)
    if previous is not None:
        for line in _compare.changes(previous["versions"], data["versions"]):
            log(f"changed {line}")
    output.write_text(render(data), encoding="utf-8")
    print(f"{output}: {len(data['versions'])} versions"
          f" in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
