"""sglang 0.5.17's serving import graph on CPU, no sgl_kernel at all: the fallback serves it.

sglang >= 0.5.9 registers ``torch.library`` fake kernels for ``sgl_kernel::*`` ops while it
is imported, so without a kernel its graph fails at import unless the stand-in defines those
ops first (``sgl-kernel-triton-fallback``).  This is the release that pins the torch of the
project's GPU machine (2.11) and sglang-kernel 0.4.5; the same graph served real requests
there (``benchmarks/results/e2e-sglang0.5.17-h200-2026-12-01.md``).

CI's environment has sglang 0.5.1's pins, so the published wheels of what 0.5.17 imports
with other pins are put first on the path: transformers 5.12.1 (its pin) with a hub and
tokenizers it accepts, flashinfer-python 0.6.15.post1 (imported unconditionally on CUDA by
``layers/quantization/fp8_utils.py``), xgrammar 0.2.1 with apache-tvm-ffi, and openai 2.6.1.
The sglang wheel is published for CPython 3.12 only; its Python files are what is imported
(its compiled modules are not part of this graph), so it is fetched for 3.12 on any Python.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ..support.stacks import failed_imports, failed_without_the_shims, import_graph

pytestmark = pytest.mark.wheels

PROGRAM = "serving_graph/no_kernel_0517"


def test_serving_graph_imports_with_no_kernel(sglang0517: tuple[Path, ...]) -> None:
    result = import_graph(PROGRAM, sglang0517, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    data = result.json()
    assert isinstance(data, dict)
    failed = failed_imports(data)
    assert failed == {}, json.dumps(failed, indent=1)
    assert "error" not in data, data
    assert data["transformers"] == "5.12.1"
    assert data["fallback"] == "sgl_kernel is not installed"
    assert data["states"]["sgl-kernel-triton-fallback"] == "applied"
    assert data["rmsnorm_op"] is True
    # sglang 0.5.17's Triton attention backend asks this at start-up; a real answer, not
    # a proxy that raises (the fake GPU is compute capability 9.0)
    assert data["pdl"] is True and data["pdl_type"] != "OptionalSymbol"


def test_serving_graph_fails_without_the_shims(sglang0517: tuple[Path, ...]) -> None:
    failed = failed_without_the_shims(PROGRAM, sglang0517, timeout=900)
    assert "sglang.srt.entrypoints.http_server" in failed, failed
    assert "sgl_kernel" in failed["sglang.srt.models.qwen3"], failed
