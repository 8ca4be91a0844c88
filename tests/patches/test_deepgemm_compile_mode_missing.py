"""deepgemm-compile-mode-missing: sglang 0.5.10rc0's DeepGEMM warm-up with a deep_gemm
that has no compile-mode API (sglang issue 23843: deep_gemm 2.4.2 from a vendor image).

The real sglang 0.5.10rc0 wheel runs ``_compile_deep_gemm_one_type_all`` on CPU.  What a
Hopper GPU would provide is set up by the harness: DeepGEMM JIT on (sglang's configurer
decides that from the GPU), free GPU memory, a CUDA stream, and a warm-up executor that
records the M values instead of launching kernels.  ``deep_gemm`` is a stand-in package:
without ``get_compile_mode`` / ``set_compile_mode`` (the report's build), or with them
(recording each call).  Stock, the first build stops with the report's AttributeError;
patched, the warm-up runs every M, as sglang 0.5.12 does when the API is missing; a
deep_gemm that has the API is left alone and sees sglang's calls.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ..support.patch_runs import run_json
from ..support.programs import program
from ..support.run import need

pytestmark = pytest.mark.wheels

PATCH = "deepgemm-compile-mode-missing"
SGLANG = "0.5.10rc0"

WITHOUT_API = '''
CALLS = []
def get_mk_alignment_for_contiguous_layout():
    return 128
'''
WITH_API = WITHOUT_API + '''
_mode = [0]
def get_compile_mode():
    CALLS.append(("get", _mode[0]))
    return _mode[0]
def set_compile_mode(mode):
    CALLS.append(("set", mode))
    _mode[0] = mode
'''

CODE = program("patches/deepgemm_compile_mode_missing")


@pytest.fixture(scope="module")
def stand_ins(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folders = {}
    for name, source in (("without", WITHOUT_API), ("with", WITH_API)):
        folder = tmp_path_factory.mktemp(f"deep_gemm_{name}")
        (folder / "deep_gemm" / "utils").mkdir(parents=True)
        (folder / "deep_gemm" / "__init__.py").write_text(source, encoding="utf-8")
        (folder / "deep_gemm" / "utils" / "__init__.py").write_text("", encoding="utf-8")
        (folder / "deep_gemm" / "utils" / "layout.py").write_text(  # sglang imports it
            "def get_mn_major_tma_aligned_tensor(x):\n    return x\n", encoding="utf-8")
        folders[name] = folder
    return folders


def run(sglang: Path, deep_gemm: Path, **env: str) -> dict[str, Any]:
    return run_json(CODE, (sglang,), env, args=(str(deep_gemm),), timeout=300)


def test_warmup_runs_without_the_compile_mode_api(
        stand_ins: dict[str, Path], sglang_release: Callable[[str], Path]) -> None:
    need("torch")
    sglang = sglang_release(SGLANG)
    stock = run(sglang, stand_ins["without"], SGLANG_SHIMS_DISABLE=PATCH)
    assert stock["state"] == "disabled" and stock["jit"] is True
    assert stock["error"] == "AttributeError: module 'deep_gemm' has no attribute " \
        "'get_compile_mode'", stock

    patched = run(sglang, stand_ins["without"])
    assert patched["state"] == "applied" and "error" not in patched, patched
    assert patched["ran"] == [1, 2, 64]
    assert patched["calls"] == []  # nothing reached deep_gemm itself


def test_a_deep_gemm_with_the_api_is_left_alone(
        stand_ins: dict[str, Path], sglang_release: Callable[[str], Path]) -> None:
    need("torch")
    data = run(sglang_release(SGLANG), stand_ins["with"])
    assert data["state"] == "retired", data
    assert data["ran"] == [1, 2, 64]
    assert data["calls"] == [["get", 0], ["set", 1], ["set", 0]]
