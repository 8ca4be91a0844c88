"""Every patch's sglang range against the published wheels, read independently of the range.

* ``test_range_matches_the_wheels``: for every published release (tests/data/
  sglang_releases.txt), whether the code the patch fixes is there -- every fingerprint on
  an sglang module holds (a source hash, the anchors, the imported names) -- as the
  committed release index records it (tests/data/release_index.json, written from the
  wheels by ``python -m tools.refresh release-index``).  The manifest's ``[requires]
  sglang`` range must contain exactly those releases: a range that is too narrow leaves a
  release with the bug unfixed, one too wide admits a release without it.  Where the code
  is there but the bug is not (or the range is not about sglang's source at all), the
  exception is listed in ``EXCEPTIONS`` below with the releases it covers and why.
* ``test_index_agrees_with_the_wheels``: the sample of real wheels
  (``tests/support/releases.py``) read again, release by release, gives what the index
  says: the index cannot drift from the wheels unseen.
* ``test_release``: inside the range, on the sample's real wheels, the patch
  ``would-apply`` in a hermetic environment (the sglang version, the versions its
  ``[range] test_with`` names, stand-in kernels): its gates, retire rule and fingerprints
  all agree.

Static, as ``sglang-shims check`` is: the real wheel is unpacked (cached) and read, nothing
of sglang is imported.
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
from sglang_shims.testing import standin, wheel_members, wheels
from tools.refresh import release_index

from ..support.releases import RELEASES, WHEEL_SAMPLE, sample_inside

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


def cases() -> list[tuple[str, str]]:
    """(patch, release) for the sample's releases inside each patch's range."""
    return [(m.id, v) for m in MANIFESTS for v in sample_inside(str(sglang_spec(m)))]


def test_every_range_admits_a_published_release() -> None:
    empty = [m.id for m in MANIFESTS if not sample_inside(str(sglang_spec(m)))]
    assert empty == [], "no published release inside these patches' sglang ranges"


# Releases where the patch's sglang fingerprints hold but its range rightly leaves them out,
# or patches whose range is not decided by sglang's source: [(releases, why)].  Each entry
# restates the manifest's [range] note; "*" covers every release.
EXCEPTIONS: dict[str, list[tuple[str, str]]] = {
    "outlines-pyairports-removed": [(
        "*", "the fingerprint is on outlines; sglang is every release whose runtime requires "
        "outlines<0.1.0 (read from their metadata: all before 0.4.2.post4)")],
    "outlines-json-schema-moved": [
        (">=0.3.5.post1,<0.4.0", "the same backend imports outlines.fsm.regex (removed in "
         "outlines 0.1.0) without a fallback, so it fails there first"),
        (">=0.4.2.post4", "the import is inside try/except ImportError that falls back to "
         "outlines_core, which works stock")],
    "deep-gemm-standin": [(
        ">=0.4.6.post5", "0.4.6.post5 and 0.4.7 put the same import inside try/except "
        "ImportError and turn JIT DeepGEMM off themselves (the retire rule); the anchor is "
        "still there")],
    "hf3fs-client-source-missing": [(
        ">=0.4.10.post2", "0.4.10.post2 on ship hf3fs_utils.cpp beside the client and import "
        "the backend only when it is chosen (the retire rule); the compile line is still "
        "there")],
    "kernels-revision-required": [(
        "*", "the bug is in the kernels and transformers wheels; no sglang fingerprint")],
    "sgl-kernel-missing-symbols": [(
        "*", "the names each release needs are data read from every wheel "
        "(kernels/surface/data/sgl_kernel_symbols.json, checked by "
        "tests/patches/test_sgl_kernel_missing_symbols.py), not a fingerprint")],
    "sgl-kernel-triton-fallback": [(
        "*", "a stand-in for sgl_kernel; the range is the releases whose serving graph was "
        "imported through it (tests/wheels/test_serving_graph.py), not a fingerprint")],
    "tf5-gpt2-bytes-to-unicode": [(
        "*", "the fingerprint is on transformers; sglang is any release that can load "
        "remote-code tokenizers")],
    "tf448-llama-flash-attention2-removed": [(
        "*", "the fingerprint is on transformers; sglang is any release that can load "
        "remote-code models, up to 0.5.10.post1 (0.5.11+ bind the name themselves at import: "
        "an absence no fingerprint can state)")],
    "sm120-triton-attention-tiles": [(
        "<0.4.0", "0.3.5-0.3.6.post3 have the same module-level CUDA_CAPABILITY tiles, but the "
        "range starts at 0.4.0, the first release whose kernels were compiled for sm_120 "
        "(manifest: '0.4.0 is the first release examined')")],
    "tf5-chat-template-return-dict": [(
        ">=0.5.8", "0.5.8 on pass return_dict=False themselves (the retire rule); the anchors "
        "are still there")],
    "tf5-rope-theta-moved": [
        ("<0.4.0", "0.3.x read rope_theta the same way but were not examined against "
         "transformers 5 (manifest: 0.4.0 is the oldest release in the matrix)"),
        (">=0.5.10", "0.5.10 on read RoPE through get_rope_config (the retire rule); llama.py "
         "keeps the getattr as a fallback")],
    "vllm-triton-cache-helpers-removed": [(
        "*", "the fingerprint is on vllm; sglang is every release that requires vllm "
        "(read from their metadata: all before 0.4.4.post2)")],
    "vllm-custom-ops-standin": [(
        "*", "the fingerprints are on vllm; sglang is every release whose CUDA path calls "
        "vllm's norm, activation or RoPE ops (read from the wheels: all before 0.4.2.post4)")],
    "torch-amx-probe-removed": [(
        ">=0.5.2rc0,<0.5.4", "0.5.2rc0-0.5.3rc0 still name the probe, inside a module-level "
        "try/except that survives its removal")],
}


@pytest.mark.parametrize("patch_id", [m.id for m in MANIFESTS])
def test_range_matches_the_wheels(patch_id: str) -> None:
    manifest = next(m for m in MANIFESTS if m.id == patch_id)
    spec = sglang_spec(manifest)
    fps = release_index.sglang_fingerprints(manifest)
    exceptions = EXCEPTIONS.get(patch_id, [])
    if exceptions[:1] and exceptions[0][0] == "*":
        assert not fps, f"{patch_id} fingerprints sglang now: drop its exception"
        return
    assert fps, f"{patch_id}: no sglang fingerprint to read its range from the wheels"
    assert release_index.problems() == [], "run: python -m tools.refresh release-index"
    present = release_index.present(patch_id)
    in_range = {v for v in RELEASES if spec.contains(Version(v), prereleases=True)}
    excused: set[str] = set()
    for releases, _why in exceptions:
        covered = {v for v in present - in_range
                   if SpecifierSet(releases).contains(Version(v), prereleases=True)}
        assert covered, f"{patch_id}: exception {releases!r} is no longer needed"
        excused |= covered
    missing = sorted(present - in_range - excused, key=Version)
    extra = sorted(in_range - present, key=Version)
    assert not missing, f"{patch_id}: the code it fixes is in {missing}, outside {spec}"
    assert not extra, f"{patch_id}: {spec} admits {extra}, whose wheels lack the code it fixes"


@pytest.mark.wheels
@pytest.mark.parametrize("version", sorted({v for _, v in cases()} | set(WHEEL_SAMPLE),
                                           key=Version))
def test_index_agrees_with_the_wheels(version: str, sglang_release: Callable[[str], Path]
                                      ) -> None:
    """The committed index says for ``version`` what its real wheel says today."""
    fps = release_index.indexed()
    found = {pid for pid, f in fps.items()
             if release_index.holds(sglang_release(version), f)}
    recorded = {pid for pid in fps if version in release_index.present(pid)}
    assert found == recorded, "run: python -m tools.refresh release-index"


READ_IN_PART = frozenset({"vllm"})
"""Wheels too large to download whole for one module (vllm: ~200 MB): only the files the
patch fingerprints are read from them, by range requests (:mod:`sglang_shims.testing.
wheel_members`)."""


def roots(manifest: Manifest) -> set[str]:
    """The top-level packages of the patch's target and of every module it fingerprints."""
    modules = (manifest.target, *(m for fp in manifest.fingerprints for m in fp.modules))
    return {m.partition(".")[0] for m in modules}


def fingerprinted_files(manifest: Manifest, dist: str, version: str) -> Path:
    root = dist.replace("-", "_")
    names = tuple(f"{m.replace('.', '/')}{tail}" for fp in manifest.fingerprints
                  for m in fp.modules if m.partition(".")[0] == root
                  for tail in (".py", "/__init__.py"))
    try:
        return wheel_members.members(dist, version, names)
    except wheels.NotServed as exc:
        pytest.skip(f"the package index could not serve {dist}=={version}: {exc}")


@pytest.mark.wheels
@pytest.mark.parametrize(("patch_id", "version"), cases())
def test_release(patch_id: str, version: str,
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
        elif dist.replace("-", "_") in roots(manifest):
            # the patch's target or a fingerprinted module lives in that distribution (a
            # transformers module, say): put its real wheel on the search path so the
            # fingerprint is read from it
            search.append(fingerprinted_files(manifest, dist, dist_version)
                          if dist in READ_IN_PART else pypi_release(dist, dist_version))
    env = Environment(versions=versions, hermetic=True, capabilities=gpu_for(manifest),
                      gpu_source="matrix")
    judged = assess(manifest, env, search_path=search)
    assert judged.state == "would-apply", f"{version}: {judged.state}: {judged.reason}"
    assert all("matches" in f or "found" in f or "imports" in f for f in judged.fingerprints)


def test_releases_list_is_sorted_and_has_the_key_versions() -> None:
    assert sorted(RELEASES, key=Version) == RELEASES
    assert {"0.1.24", "0.5.1", "0.5.5.post3", "0.5.6", "0.5.9", "0.5.10", "0.5.0rc2"} <= set(
        RELEASES)


def test_standin_versions_cover_test_with() -> None:
    for manifest in MANIFESTS:
        for dist, version in manifest.test_with.items():
            if dist in ("sgl-kernel", "sglang-kernel"):
                assert version in standin.versions() and standin.dist_name(version) == dist
