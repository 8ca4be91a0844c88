"""flashinfer-jit-norm-fallback: sglang 0.5.3's own Qwen3 and Llama serve with no kernel
installed while flashinfer (its pin, 0.4.0rc3) is.

0.5.2-0.5.3.post1 take ``fused_add_rmsnorm`` from ``flashinfer.norm`` whenever flashinfer
is installed; flashinfer builds it with nvcc at its first call, which fails on this machine
(no CUDA toolkit) as on a GPU machine without one.  In the release's own environment (the
compatibility matrix's overlay, flashinfer included) the matrix's model check -- one
prefill and two decode steps through sglang's model classes and KV pools, greedy tokens
checked against transformers -- passes with the shims, and with only this patch disabled
fails in flashinfer's JIT build.  With a stand-in of the pinned sgl-kernel (a kernel that
loads) the patch retires and sglang keeps flashinfer's function.  flashinfer's JIT
workspace goes to a temporary folder.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from ..support.programs import program
from ..support.run import run_python
from ..support.stacks import model_check, overlay_paths

pytestmark = pytest.mark.wheels

PATCH = "flashinfer-jit-norm-fallback"
RELEASE = "0.5.3"


@pytest.fixture(scope="module")
def paths() -> tuple[Path, ...]:
    site, root = overlay_paths(RELEASE)
    assert (site / "flashinfer" / "norm.py").is_file(), "the release's flashinfer is missing"
    return (site, root)


def test_model_serves_through_the_fallback_norm(paths: tuple[Path, ...],
                                                tmp_path: Path) -> None:
    data = model_check(paths, FLASHINFER_WORKSPACE_BASE=str(tmp_path))
    assert data["kernel_loaded"] == "fallback"
    assert isinstance(data["acted"], list) and PATCH in data["acted"], data
    model = data["model"]
    assert isinstance(model, dict) and model["ok"] is True, model


def test_without_the_patch_flashinfer_builds_and_fails(paths: tuple[Path, ...],
                                                       tmp_path: Path) -> None:
    data = model_check(paths, FLASHINFER_WORKSPACE_BASE=str(tmp_path),
                       SGLANG_SHIMS_DISABLE=PATCH)
    assert data["kernel_loaded"] == "fallback"
    assert isinstance(data["acted"], list) and PATCH not in data["acted"]
    model = data["model"]
    assert isinstance(model, dict) and model["ok"] is False
    assert "flashinfer" in json.dumps(model) and "Ninja build failed" in str(model["error"]), \
        json.dumps(model)


def test_with_a_kernel_that_loads_flashinfer_stays(paths: tuple[Path, ...],
                                                  standin_kernel: Callable[..., Path],
                                                  tmp_path: Path) -> None:
    kernel = standin_kernel("0.3.14.post1")  # 0.5.3's pin
    result = run_python(program("patches/flashinfer_jit_norm_fallback"),
                        paths=(kernel, *paths),
                        env={"FLASHINFER_WORKSPACE_BASE": str(tmp_path)}, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.json() == {"state": "retired", "module": "flashinfer.norm"}, result.stdout
