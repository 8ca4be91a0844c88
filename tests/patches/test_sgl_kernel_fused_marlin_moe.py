"""sgl-kernel-fused-marlin-moe on the real sglang 0.5.1 wheel, with stand-in kernels.

The sglang wheel is unpacked from PyPI (cached); ``sgl_kernel`` is a stand-in with the
exact export surface of the chosen kernel release.  What is checked is the user's
view: the import that failed now works, the call fails clearly, every toggle brings
the stock error back, and a kernel that still has the symbol is left alone.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from ..support.programs import program
from ..support.run import Result, run_python

pytestmark = pytest.mark.wheels

IMPORT = program("patches/sgl_kernel_fused_marlin_moe/import_and_call")
MANY_CALLS = program("patches/sgl_kernel_fused_marlin_moe/many_calls")


def run(paths: tuple[Path, ...], code: str = IMPORT, **env: str) -> Result:
    return run_python(code, paths=paths, env=env, fork=True)


def test_proxy_and_clear_error(sglang051: Path, standin_kernel: Callable[..., Path]) -> None:
    result = run((sglang051, standin_kernel("0.3.18")))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].endswith("fused_marlin_moe sgl_kernel")
    error = lines[1]
    assert error.startswith("MissingSymbolError: sgl_kernel.fused_marlin_moe is not available")
    for fact in ("sgl-kernel 0.3.18", "sgl-kernel 0.2.2–0.3.17.post2", "AWQ/GPTQ MoE models",
                 "pip install 'sgl-kernel>=0.2.2,<0.3.18'"):
        assert fact in error, fact
    entry = result.json()
    assert entry["state"] == "applied"
    assert entry["proxies"]["sgl_kernel.fused_marlin_moe"]["failed_calls"] == 1
    assert result.stderr.count("sgl_kernel.fused_marlin_moe is not available") == 1  # logs once


def test_many_failed_calls_log_once(sglang051: Path, standin_kernel: Callable[..., Path]) -> None:
    """40 calls from 4 threads: each raises the full message, stderr has it once, all counted."""
    result = run((sglang051, standin_kernel("0.3.18")), MANY_CALLS)
    assert result.returncode == 0, result.stderr
    # no substitute: nothing was rebound to one
    assert result.json() == {"messages": 40, "distinct": 1, "failed_calls": 40, "rebound": 0}
    assert result.stderr.count("sgl_kernel.fused_marlin_moe is not available") == 1, result.stderr


@pytest.mark.parametrize("env", [
    {"SGLANG_SHIMS": "0"},
    {"SGLANG_SHIMS_DISABLE": "sgl-kernel-fused-marlin-moe"},
    {"SGLANG_SHIMS_PATCH_SGL_KERNEL_FUSED_MARLIN_MOE": "0"},
])
def test_toggles_bring_back_the_stock_error(sglang051: Path, standin_kernel: Callable[..., Path],
                                            env: dict[str, str]) -> None:
    result = run((sglang051, standin_kernel("0.3.18")), **env)
    assert result.returncode == 1
    assert "ImportError: cannot import name 'fused_marlin_moe' from 'sgl_kernel'" in result.stderr


@pytest.mark.parametrize(("kernel", "state"), [
    (("0.3.17.post2",), "not-applicable"),             # older kernel: still exports it
    (("0.3.18", ("fused_marlin_moe",)), "retired"),     # a build that exports it again
])
def test_kernel_that_exports_it_is_untouched(sglang051: Path,
                                             standin_kernel: Callable[..., Path],
                                             kernel: tuple[object, ...], state: str) -> None:
    version = str(kernel[0])
    add = kernel[1] if len(kernel) > 1 else ()
    folder = standin_kernel(version, add=add)
    result = run((sglang051, folder))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0].startswith("<function fused_marlin_moe")
    assert "is a stub" in result.stdout.splitlines()[1]  # the kernel's own function ran
    assert result.json()["state"] == state


def test_sglang_kernel_0_4_is_covered(sglang051: Path, standin_kernel: Callable[..., Path]) -> None:
    """The renamed distribution (sglang-kernel 0.4.x) lacks the name too."""
    result = run((sglang051, standin_kernel("0.4.5")))
    assert result.json()["state"] == "applied"
    assert "the installed sglang-kernel 0.4.5 does not export it" in result.stdout


def test_outside_sglang_range(sglang_release: Callable[[str], Path],
                              standin_kernel: Callable[..., Path]) -> None:
    """sglang 0.5.6 carries its own fused_marlin_moe: the patch stays out."""
    result = run((sglang_release("0.5.6"), standin_kernel("0.3.18")))
    assert result.returncode == 1  # the stand-in has no such name, and nothing adds it
    assert "cannot import name 'fused_marlin_moe'" in result.stderr
