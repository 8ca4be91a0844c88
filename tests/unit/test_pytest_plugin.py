"""The pytest plugin's factories (``sglang_shims.testing.pytest_plugin``), used as a patch's
tests use them: a stand-in kernel is built once per set of arguments, and a wheel the
package index cannot serve skips the test while any other failure to get one fails it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from sglang_shims.testing import wheels


def test_a_standin_kernel_is_built_once_per_arguments(
        standin_kernel: Callable[..., Path]) -> None:
    first = standin_kernel("0.3.18")
    assert (first / "sgl_kernel" / "__init__.py").is_file()
    assert standin_kernel("0.3.18") == first
    assert standin_kernel("0.3.18", drop=("silu_and_mul",)) != first


def test_a_wheel_is_unpacked_or_the_test_skipped_or_failed(
        monkeypatch: pytest.MonkeyPatch, pypi_release: Callable[[str, str], Path],
        sglang_release: Callable[[str], Path], tmp_path: Path) -> None:
    asked: list[tuple[str, str]] = []

    def served(dist: str, version: str) -> Path:
        asked.append((dist, version))
        return tmp_path / f"{dist}-{version}"

    monkeypatch.setattr(wheels, "unpack", served)
    assert pypi_release("torch", "2.9.1") == tmp_path / "torch-2.9.1"
    assert sglang_release("0.5.1") == tmp_path / "sglang-0.5.1"
    assert asked == [("torch", "2.9.1"), ("sglang", "0.5.1")]

    def refused(dist: str, version: str) -> Path:
        raise wheels.NotServed("offline")

    monkeypatch.setattr(wheels, "unpack", refused)
    with pytest.raises(pytest.skip.Exception, match=r"could not serve torch==2\.9\.1: offline"):
        pypi_release("torch", "2.9.1")

    def broken(dist: str, version: str) -> Path:
        raise RuntimeError("hash mismatch")

    monkeypatch.setattr(wheels, "unpack", broken)
    with pytest.raises(pytest.fail.Exception, match="hash mismatch"):
        pypi_release("torch", "2.9.1")
