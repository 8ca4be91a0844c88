"""``tests/data/release_index.json``: which sglang releases hold the code each patch fixes.

For every patch with an sglang gate and sglang fingerprints, the releases (of
``tests/data/sglang_releases.txt``) whose published wheel satisfies all of them, read
with the engine's own fingerprint check (``sglang_shims.engine.source.check_all``) from
the wheel's ``.py`` files, never imported.  The range test compares each manifest's
``[requires] sglang`` with this instead of downloading every release; a sample of real
wheels in the suite re-reads a few releases so that the index cannot drift unseen.

Each patch's entry records a digest of the fingerprints it was read with: a manifest
whose fingerprints changed makes ``--check`` (and the range test) say the index is stale
for that patch.  A refresh re-reads a release only where something changed: a new
release, a new or changed fingerprint, a wheel whose sha256 differs.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from packaging.version import Version

from sglang_shims.catalog import load as _catalog
from sglang_shims.catalog.manifest import Fingerprint, Manifest
from sglang_shims.engine import source as _source

from .context import REPO

DATA = REPO / "tests" / "data" / "release_index.json"
RELEASES = REPO / "tests" / "data" / "sglang_releases.txt"
GENERATOR = 1
SOURCE = ("every sglang wheel of tests/data/sglang_releases.txt (its .py files, read with"
          " the engine's fingerprint check)")


def releases(path: Path = RELEASES) -> list[str]:
    return path.read_text(encoding="utf-8").split()


def sglang_fingerprints(manifest: Manifest) -> tuple[Fingerprint, ...]:
    """The fingerprints a patch places on sglang's own modules."""
    return tuple(fp for fp in manifest.fingerprints
                 if all(m.partition(".")[0] == "sglang" for m in fp.modules))


def indexed(manifests: list[Manifest] | None = None) -> dict[str, tuple[Fingerprint, ...]]:
    """{patch id: its sglang fingerprints} of every patch gated on sglang that has any."""
    found = manifests if manifests is not None else _catalog.load().manifests
    out = {}
    for manifest in found:
        fps = sglang_fingerprints(manifest)
        if fps and any(g.dists == ("sglang",) for g in manifest.requires):
            out[manifest.id] = fps
    return dict(sorted(out.items()))


def fingerprint_digest(fps: tuple[Fingerprint, ...]) -> str:
    """A digest of what the fingerprints ask (module, kind and expected values)."""
    text = json.dumps([{f: getattr(fp, f) for f in fp._FIELDS} for fp in fps],
                      sort_keys=True, default=list)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def spans(present: list[str], order: list[str]) -> list[list[str]]:
    """Runs of consecutive releases of ``order`` that are in ``present``, as [first, last]."""
    out: list[list[str]] = []
    inside = set(present)
    run: list[str] = []
    for version in [*order, None]:
        if version is not None and version in inside:
            run.append(version)
        elif run:
            out.append([run[0], run[-1]])
            run = []
    return out


def expand(runs: list[list[str]], order: list[str]) -> set[str]:
    """The releases of ``order`` the [first, last] runs cover."""
    at = {v: i for i, v in enumerate(order)}
    return {order[i] for first, last in runs for i in range(at[first], at[last] + 1)}


def python_files(wheel: Path, dest: Path) -> Path:
    """Extract the wheel's ``.py`` files into ``dest`` (no bytecode, nothing else)."""
    with zipfile.ZipFile(wheel) as archive:
        for name in archive.namelist():
            if name.endswith(".py") and name.startswith("sglang/"):
                archive.extract(name, dest)
    return dest


def holds(root: Path, fps: tuple[Fingerprint, ...]) -> bool:
    """Do all of ``fps`` hold in the release unpacked (or extracted) at ``root``?"""
    return _source.check_all(fps, [root])[0]


def read_release(wheel: Path, fps: dict[str, tuple[Fingerprint, ...]]) -> set[str]:
    """The patch ids whose fingerprints all hold in this wheel."""
    with tempfile.TemporaryDirectory(prefix="release-index-") as folder:
        root = python_files(wheel, Path(folder))
        return {pid for pid, found in fps.items() if holds(root, found)}


def build(fetch: Callable[[str], Path], log: Callable[[str], None],
          old: dict[str, Any] | None = None, order: list[str] | None = None,
          manifests: list[Manifest] | None = None) -> dict[str, Any]:
    """The index for every release of ``order`` (default: the release list), reading a
    wheel (``fetch(version)``) only where the recorded answer may have changed."""
    order = order if order is not None else releases()
    fps = indexed(manifests)
    digests = {pid: fingerprint_digest(f) for pid, f in fps.items()}
    old = old or {"patches": {}, "wheels": {}}
    old_order = list(old.get("wheels", {}))
    known = {pid: expand(e["present"], old_order) for pid, e in old["patches"].items()
             if e["fingerprints"] == digests.get(pid)}
    wheels: dict[str, str] = {}
    present: dict[str, set[str]] = {pid: set() for pid in fps}
    for version in order:
        recorded = old.get("wheels", {}).get(version)
        todo = {pid: f for pid, f in fps.items() if not (recorded and pid in known)}
        found: set[str] = set()
        if recorded and not todo:  # a published file never changes: nothing to read
            wheels[version] = recorded
        else:
            wheel = fetch(version)
            wheels[version] = f"{wheel.name} {hashlib.sha256(wheel.read_bytes()).hexdigest()}"
            if wheels[version] != recorded:  # not the file read before: read it all again
                todo = dict(fps)
            found = read_release(wheel, todo)
        for pid in fps:
            if (pid in found) if pid in todo else version in known[pid]:
                present[pid].add(version)
        if todo:
            log(f"{version}: read for {len(todo)} patch(es)")
    return {"patches": {pid: {"fingerprints": digests[pid],
                              "present": spans(sorted(present[pid], key=Version), order)}
                        for pid in fps},
            "wheels": wheels}


def render(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=1) + "\n"


def load(path: Path = DATA) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def present(patch_id: str, path: Path = DATA) -> set[str]:
    """The releases whose wheel holds every sglang fingerprint of ``patch_id``."""
    data = load(path)
    return expand(data["patches"][patch_id]["present"], list(data["wheels"]))


def problems(path: Path = DATA, order: list[str] | None = None,
             manifests: list[Manifest] | None = None) -> list[str]:
    """Offline: the index covers the release list and today's fingerprints."""
    order = order if order is not None else releases()
    try:
        data = load(path)
    except (OSError, ValueError) as exc:
        return [f"{path.name}: {type(exc).__name__}: {exc}"]
    out = []
    if list(data["wheels"]) != order:
        missing = [v for v in order if v not in data["wheels"]]
        out.append(f"{path.name}: its releases are not tests/data/sglang_releases.txt"
                   f" (missing: {missing[:5]}{'...' if len(missing) > 5 else ''})")
    fps = indexed(manifests)
    for pid in sorted(set(fps) | set(data["patches"])):
        if pid not in data["patches"]:
            out.append(f"{path.name}: {pid} is not indexed")
        elif pid not in fps:
            out.append(f"{path.name}: {pid} is indexed but has no sglang fingerprint now")
        elif data["patches"][pid]["fingerprints"] != fingerprint_digest(fps[pid]):
            out.append(f"{path.name}: {pid}'s fingerprints changed since it was indexed")
    return out
