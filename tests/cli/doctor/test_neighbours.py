"""The libraries around sglang: where ``deep_gemm`` comes from, and the rules on DeepGEMM,
tilelang and xgrammar.

``deep_gemm`` is read from folders laid out as each kind of install leaves them: DeepGEMM's
own ``setup.py`` (a ``deep_gemm`` distribution versioned ``2.4.2+7f2a703``, the version of
sglang issue 24146's vendor image), the kernel's RECORD that lists the same file, and a
bare checkout on the path.  The rules are judged on sglang's real ``Requires-Dist`` lines.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from sglang_shims.cli.doctor.deep_gemm_facts import DeepGemm, gather_deep_gemm

from ...support.doctor import facts, verdict


def _dist(site: Path, name: str, version: str, files: list[str]) -> None:
    info = site / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
                                   encoding="utf-8")
    (info / "RECORD").write_text("".join(f"{f},,\n" for f in files), encoding="utf-8")


def _package(site: Path, version: str | None) -> None:
    (site / "deep_gemm").mkdir(parents=True)
    line = f"__version__ = '{version}'\n" if version else ""
    (site / "deep_gemm" / "__init__.py").write_text(f"import torch\n{line}", encoding="utf-8")


def test_a_source_build_over_the_kernels_copy(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """``pip install .`` of DeepGEMM after sgl-kernel: both RECORDs list the file, the file
    is DeepGEMM's own (it has a ``__version__``), the commit is the local label."""
    _package(tmp_path, "2.4.2")
    _dist(tmp_path, "sgl_kernel", "0.3.16.post3", ["deep_gemm/__init__.py"])
    _dist(tmp_path, "deep_gemm", "2.4.2+7f2a703", ["deep_gemm/__init__.py"])
    monkeypatch.syspath_prepend(str(tmp_path))
    found = gather_deep_gemm()
    assert found == DeepGemm(str(tmp_path.resolve() / "deep_gemm"),
                             (("deep-gemm", "2.4.2+7f2a703"), ("sgl-kernel", "0.3.16.post3")),
                             "2.4.2", "7f2a703")
    assert found.kind == "source"
    assert found.shown() == f"a source build of DeepGEMM 2.4.2 (commit 7f2a703) at {found.folder}"


def test_the_kernels_copy_and_a_checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kernel, checkout = tmp_path / "site", tmp_path / "DeepGEMM"
    _package(kernel, None)
    _dist(kernel, "sgl_kernel", "0.3.16.post3", ["deep_gemm/__init__.py"])
    monkeypatch.syspath_prepend(str(kernel))
    bundled = gather_deep_gemm()
    assert bundled is not None and bundled.kind == "kernel" and bundled.version is None
    assert bundled.shown().startswith("the copy bundled with sgl-kernel 0.3.16.post3 at ")
    _package(checkout, "2.1.1")
    (checkout / ".git" / "refs" / "heads").mkdir(parents=True)
    (checkout / ".git" / "HEAD").write_text("ref: refs/heads/main\n", encoding="utf-8")
    (checkout / ".git" / "refs" / "heads" / "main").write_text("51d1e9c" + "0" * 33 + "\n",
                                                                encoding="utf-8")
    monkeypatch.syspath_prepend(str(checkout))
    built = gather_deep_gemm()
    assert built is not None and built.kind == "source" and built.owners == ()
    assert (built.version, built.commit) == ("2.1.1", "51d1e9c")


def _requires(version: str) -> list[str]:
    from sglang_shims.testing import wheels

    with zipfile.ZipFile(wheels.fetch("sglang", version)) as archive:
        meta = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        text = archive.read(meta).decode()
    return [ln.split(": ", 1)[1] for ln in text.splitlines() if ln.startswith("Requires-Dist: ")]


SOURCE = DeepGemm("/site/deep_gemm", (("deep-gemm", "2.1.1+51d1e9c"),), "2.1.1", "51d1e9c")
BUNDLED = DeepGemm("/site/deep_gemm", (("sgl-kernel", "0.3.16.post3"),))


@pytest.mark.wheels
def test_a_source_build_under_sglang_0_5_4_is_named_with_its_remedy() -> None:
    """sglang issue 12918: sglang 0.5.4 with DeepGEMM built from source."""
    versions = {"sglang": "0.5.4", "sgl-kernel": "0.3.16.post3", "deep-gemm": "2.1.1+51d1e9c"}
    found = verdict("deepgemm-not-sglangs-build",
                    facts(versions, requires={"sglang": _requires("0.5.4")}, deep_gemm=SOURCE))
    assert found is not None and found.level == "warn"
    assert found.detail.startswith("deep_gemm is a source build of DeepGEMM 2.1.1 (commit "
                                   "51d1e9c) at /site/deep_gemm; sglang 0.5.4 calls the DeepGEMM "
                                   "API of the copy bundled with sgl-kernel==0.3.16.post3")
    assert "patch deepgemm-compile-mode-missing covers the compile-mode calls" in found.detail
    assert found.remedy.startswith("pip uninstall -y deep_gemm && pip install --force-reinstall "
                                   "--no-deps 'sgl-kernel==0.3.16.post3'")
    kernel = facts(versions, requires={"sglang": _requires("0.5.4")}, deep_gemm=BUNDLED)
    assert verdict("deepgemm-not-sglangs-build", kernel) is None
    from sglang_shims.cli import doctor

    [ok] = [f for f in doctor.checks.pins.check_pins(kernel) if f.detail.startswith("deep_gemm")]
    assert ok.level == "ok" and "the DeepGEMM sglang 0.5.4 calls" in ok.detail


@pytest.mark.wheels
def test_the_kernels_copy_where_sglang_pins_sgl_deep_gemm() -> None:
    found = verdict("deepgemm-not-sglangs-build",
                    facts({"sglang": "0.5.12", "sglang-kernel": "0.4.2"},
                          requires={"sglang": _requires("0.5.12")},
                          deep_gemm=DeepGemm("/s/deep_gemm", (("sglang-kernel", "0.4.2"),))))
    assert found is not None and "calls the DeepGEMM API of sgl-deep-gemm==0.1.0" in found.detail
    assert found.remedy.startswith("pip install --force-reinstall --no-deps "
                                   "'sgl-deep-gemm==0.1.0'")
    assert "compile-mode" not in found.detail


def test_tilelang_wg_wait_range() -> None:
    """sglang 0.5.3rc2-0.5.14 pass T.gemm(wg_wait=...); tilelang 0.1.9 removed it."""
    assert verdict("tilelang-gemm-wg-wait-removed",
                   facts({"sglang": "0.5.12", "tilelang": "0.1.9"})) is not None
    for versions in ({"sglang": "0.5.12", "tilelang": "0.1.8"},
                     {"sglang": "0.5.15", "tilelang": "0.1.11"},
                     {"sglang": "0.5.3", "tilelang": None}):
        assert verdict("tilelang-gemm-wg-wait-removed", facts(versions)) is None, versions
