"""Every patch against every published sglang release in its range, and just outside it.

Static, as ``sglang-shims check`` is: the real wheel is unpacked (cached) and the
patch judged against its files with a hermetic environment (the sglang version, plus
the versions the manifest's ``[range] test_with`` names, stand-in kernels on the
search path).  Inside the range the fingerprints must match and the patch must
``would-apply``; the release just below and just above, and any release the range
excludes between its ends, must be ``not-applicable``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from sglang_shims.catalog import load as _catalog
from sglang_shims.catalog.manifest import Manifest
from sglang_shims.engine.gates import Environment
from sglang_shims.engine.judge import assess
from sglang_shims.testing import standin

pytestmark = pytest.mark.wheels

RELEASES = [line.strip() for line in
            (Path(__file__).with_name("data") / "sglang_releases.txt").read_text().splitlines()
            if line.strip()]
MANIFESTS = [m for m in _catalog.load().manifests
             if any(g.dists == ("sglang",) for g in m.requires)]


def sglang_spec(manifest: Manifest) -> SpecifierSet:
    (gate,) = [g for g in manifest.requires if g.dists == ("sglang",)]
    return SpecifierSet(gate.spec)


def gpu_for(manifest: Manifest) -> list[tuple[int, int]]:
    """A GPU the patch's own GPU gate accepts (none needed without a gate)."""
    if not manifest.gpu:
        return []
    spec = SpecifierSet(manifest.gpu)
    for cap in ((12, 0), (10, 0), (9, 0), (11, 0), (12, 1), (10, 3), (8, 9)):
        if spec.contains(Version(f"{cap[0]}.{cap[1]}")):
            return [cap]
    raise AssertionError(f"{manifest.id}: no known GPU matches {manifest.gpu}")


def cases() -> list[tuple[str, str, bool]]:
    out = []
    for manifest in MANIFESTS:
        spec = sglang_spec(manifest)
        inside = [v for v in RELEASES if spec.contains(Version(v), prereleases=True)]
        assert inside, f"{manifest.id}: no published release in {spec}"
        first, last = RELEASES.index(inside[0]), RELEASES.index(inside[-1])
        out += [(manifest.id, v, True) for v in inside]
        # releases the range excludes between its ends (``!=`` holes) must stay stock too
        out += [(manifest.id, v, False) for v in RELEASES[first:last + 1] if v not in inside]
        if first > 0:
            out.append((manifest.id, RELEASES[first - 1], False))
        if last + 1 < len(RELEASES):
            out.append((manifest.id, RELEASES[last + 1], False))
    return out


@pytest.mark.parametrize(("patch_id", "version", "inside"), cases())
def test_release(patch_id: str, version: str, inside: bool,
                 sglang_release: Callable[[str], Path],
                 standin_kernel: Callable[..., Path],
                 pypi_release: Callable[[str, str], Path]) -> None:
    manifest = next(m for m in MANIFESTS if m.id == patch_id)
    search = [sglang_release(version)]
    versions: dict[str, str | None] = {"sglang": version}
    for dist, dist_version in manifest.test_with.items():
        versions[dist] = dist_version
        if dist in ("sgl-kernel", "sglang-kernel"):
            search.append(standin_kernel(dist_version, name=dist))
        elif manifest.target.partition(".")[0] == dist.replace("-", "_"):
            # the patch's target lives in that distribution (a transformers module, say):
            # put its real wheel on the search path so the fingerprint is read from it
            search.append(pypi_release(dist, dist_version))
    env = Environment(versions=versions, hermetic=True, capabilities=gpu_for(manifest),
                      gpu_source="matrix")
    judged = assess(manifest, env, search_path=search)
    if inside:
        assert judged.state == "would-apply", f"{version}: {judged.state}: {judged.reason}"
        assert all("matches" in f or "found" in f or "imports" in f for f in judged.fingerprints)
    else:
        assert judged.state == "not-applicable", f"{version}: {judged.state}: {judged.reason}"
        assert f"sglang {version} not in" in judged.reason


def test_releases_list_is_sorted_and_has_the_key_versions() -> None:
    assert sorted(RELEASES, key=Version) == RELEASES
    assert {"0.1.24", "0.5.1", "0.5.5.post3", "0.5.6", "0.5.9", "0.5.10", "0.5.0rc2"} <= set(
        RELEASES)


def test_standin_versions_cover_test_with() -> None:
    for manifest in MANIFESTS:
        for dist, version in manifest.test_with.items():
            if dist in ("sgl-kernel", "sglang-kernel"):
                assert version in standin.versions() and standin.dist_name(version) == dist
