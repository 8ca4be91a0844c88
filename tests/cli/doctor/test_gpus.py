"""``doctor`` on a GPU the kernel wheel has no image for: what CI found for the fallback.

The verdicts come from ``sglang_shims/cli/doctor/gpus.json``, which ``python -m
tools.refresh gpus-page`` writes with docs/gpus.md (the page is not in the installed package).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sglang_shims.cli.doctor import Facts, Finding, checks, diagnose, gpu_facts
from sglang_shims.cli.doctor.checks import fallback
from sglang_shims.engine.gates import Environment
from sglang_shims.patching.elf import FLAG_ARCH_SPECIFIC, FLAG_FAMILY, FatbinEntry, LibraryInfo

# sglang-kernel 0.4.10's common_ops, sm90/ and sm100/ alike (docs/gpus/kernel-images.json)
IMAGES = (FatbinEntry(2, 80), FatbinEntry(2, 89), FatbinEntry(2, 90),
          FatbinEntry(2, 90, FLAG_ARCH_SPECIFIC), FatbinEntry(2, 100, FLAG_FAMILY),
          FatbinEntry(2, 120, FLAG_ARCH_SPECIFIC))


def machine(caps: list[tuple[int, int]], kernel: bool = True) -> Facts:
    versions = {"sglang-kernel": "0.4.10", "torch": "2.13.0"} if kernel else {"torch": "2.13.0"}
    f = Facts(env=Environment(versions=versions, capabilities=caps, hermetic=True),
              kernel_dir=Path("/site/sgl_kernel") if kernel else None)
    if kernel:
        for key in ("sm90", "sm100"):
            f.libraries[key] = LibraryInfo(Path(f"/site/sgl_kernel/{key}/common_ops.abi3.so"),
                                           IMAGES, (), ())
    return f


def only(findings: list[Finding]) -> Finding:
    [found] = [f for f in findings if f.check == fallback.CHECK]
    return found


def test_gb10_gets_the_fallback_verdict_from_ci() -> None:
    """DGX Spark (sm_121): no wheel read carries sm_121 (sm_120a runs on 12.0 only)."""
    found = only(fallback.check_fallback(machine([(12, 1)])))
    assert found.level == "info"
    assert found.detail.startswith("your GPU is sm_121; sglang-kernel 0.4.10 has no image for "
                                   "it; the fallback compiles for it and fits its limits "
                                   "(checked in CI, Triton ")
    assert "none of the kernel releases read for docs/gpus.md has code for it" in found.detail


def test_a_t4_hears_which_release_still_had_its_code() -> None:
    found = only(fallback.check_fallback(machine([(7, 5)])))
    assert "sglang-kernel 0.4.10 has no image for it" in found.detail
    assert "FP8 ops compute in plain torch there" in found.detail
    assert found.detail.endswith("with code for it: sgl-kernel 0.3.5")


def test_quiet_where_the_kernel_has_code() -> None:
    assert fallback.check_fallback(machine([(12, 0), (9, 0), (8, 6)])) == []
    assert fallback.check_fallback(machine([])) == []


def test_without_a_kernel_the_fallback_is_what_runs() -> None:
    found = only(fallback.check_fallback(machine([(12, 0)], kernel=False)))
    assert found.detail.startswith("your GPU is sm_120; no kernel distribution is installed; "
                                   "the fallback compiles for it")
    assert "sglang-kernel 0.4.10" in found.detail


def test_in_the_report_right_after_the_arch_check() -> None:
    ids = [check_id for check_id, _ in checks.ordered(False, None)]
    assert ids.index("gpu-fallback") == ids.index("sgl-kernel-arch") + 1
    found = [f for f in diagnose(Environment(versions={}, capabilities=[(12, 1)], hermetic=True))
             if f.check == "gpu-fallback"]
    assert [f.detail.split(";")[:2] for f in found] == [
        ["your GPU is sm_121", " no kernel distribution is installed"]]


def test_an_architecture_ci_never_compiled_for_says_so() -> None:
    assert gpu_facts.fallback_text((13, 0)) == (
        "the fallback kernels were not compiled for sm_130 in CI (see docs/gpus.md)")


def test_a_missing_data_file_says_nothing_wrong(monkeypatch: pytest.MonkeyPatch,
                                               tmp_path: Path) -> None:
    monkeypatch.setattr(gpu_facts, "FILE", tmp_path / "gpus.json")
    gpu_facts.data.cache_clear()
    try:
        assert gpu_facts.data() == {}
        assert "not compiled for sm_120" in gpu_facts.fallback_text((12, 0))
        assert gpu_facts.releases_with_image((12, 0)) == []
        (tmp_path / "gpus.json").write_text("{not json", encoding="utf-8")
        gpu_facts.data.cache_clear()
        assert gpu_facts.data() == {}
    finally:
        gpu_facts.data.cache_clear()


def test_the_shipped_data_is_the_pages() -> None:
    """Every architecture of the page is in the shipped copy, with a verdict doctor knows."""
    shipped = json.loads(gpu_facts.FILE.read_text(encoding="utf-8"))
    assert shipped["source"].startswith("docs/gpus.md")
    for arch, entry in shipped["arches"].items():
        assert entry["fallback"] in ("fits", "fails", "unsupported", "probe"), arch
    assert shipped["arches"]["sm_120"]["fallback"] == "fits"
    assert shipped["arches"]["sm_120"]["images"]["sglang-kernel 0.4.10"] == "sass"
