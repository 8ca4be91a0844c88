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
from collections.abc import Callable
from pathlib import Path

import pytest

from ..support.run import Result, need, run_python
from ..support.stacks import IMPORT_EACH
from .test_serving_graph import SERVING_GRAPH

pytestmark = pytest.mark.wheels

SGLANG = "0.5.17"
# 0.5.17's own pins where CI's environment (0.5.1's) differs, and what it adds
WHEELS = (("transformers", "5.12.1"), ("huggingface_hub", "1.33.0"), ("tokenizers", "0.22.2"),
          ("flashinfer-python", "0.6.15.post1"), ("xgrammar", "0.2.1"),
          ("apache-tvm-ffi", "0.1.15.post2"), ("openai", "2.6.1"))
FOR_PY312 = ("--python-version", "3.12", "--implementation", "cp", "--platform",
             "manylinux_2_34_x86_64")

IMPORT_ALL = IMPORT_EACH + """
results = {name: text[:500] for name, text in results.items()}
out = {"results": results}
try:
    import sgl_kernel, transformers, sglang_shims
    from sgl_kernel.utils import is_arch_support_pdl
    import torch
    out["pdl"] = is_arch_support_pdl()
    out["pdl_type"] = type(is_arch_support_pdl).__name__
    out["fallback"] = getattr(sgl_kernel, "__sglang_shims_fallback__", None)
    out["transformers"] = transformers.__version__
    out["states"] = {k: v["state"] for k, v in sglang_shims.status().items()}
    out["rmsnorm_op"] = hasattr(torch.ops.sgl_kernel, "rmsnorm")
except BaseException as exc:
    out["error"] = f"{type(exc).__name__}: {exc}"[:500]
print(json.dumps(out))
"""


def release_paths(pypi_release: Callable[[str, str], Path],
                  sglang_version: str = SGLANG) -> tuple[Path, ...]:
    """PYTHONPATH entries for sglang 0.5.17 on CI's environment: its own pins first, then
    the wheel (also what tests/test_model_forward.py runs 0.5.17's models on).  Another
    ``sglang_version`` gets the same environment (the JIT-kernel patch tests run 0.5.13's
    models on it, rather than resolve and install 0.5.13's own 1.7 GB one)."""
    for module in ("torch", "fastapi", "zmq"):
        need(module)
    from sglang_shims.testing import wheels

    try:
        sglang = wheels.unpack("sglang", sglang_version, pip_args=FOR_PY312)
    except RuntimeError as exc:
        pytest.fail(str(exc))
    return (*(pypi_release(dist, version) for dist, version in WHEELS), sglang)


@pytest.fixture(scope="module")
def paths(pypi_release: Callable[[str, str], Path]) -> tuple[Path, ...]:
    return release_paths(pypi_release)


def import_graph(paths: tuple[Path, ...], **env: str) -> Result:
    code = IMPORT_ALL.replace("MODULES", repr(SERVING_GRAPH))
    return run_python(code, paths=paths, env=env, timeout=900)


def test_serving_graph_imports_with_no_kernel(paths: tuple[Path, ...]) -> None:
    result = import_graph(paths)
    assert result.returncode == 0, result.stderr[-3000:]
    data = json.loads(result.stdout.strip().splitlines()[-1])
    failed = {k: v for k, v in data["results"].items() if v != "ok"}
    assert failed == {}, json.dumps(failed, indent=1)
    assert "error" not in data, data
    assert data["transformers"] == "5.12.1"
    assert data["fallback"] == "sgl_kernel is not installed"
    assert data["states"]["sgl-kernel-triton-fallback"] == "applied"
    assert data["rmsnorm_op"] is True
    # sglang 0.5.17's Triton attention backend asks this at start-up; a real answer, not
    # a proxy that raises (the fake GPU is compute capability 9.0)
    assert data["pdl"] is True and data["pdl_type"] != "OptionalSymbol"


def test_serving_graph_fails_without_the_shims(paths: tuple[Path, ...]) -> None:
    result = import_graph(paths, SGLANG_SHIMS="0")
    data = json.loads(result.stdout.strip().splitlines()[-1])
    failed = {k: v for k, v in data["results"].items() if v != "ok"}
    assert "sglang.srt.entrypoints.http_server" in failed, data
    assert "sgl_kernel" in failed["sglang.srt.models.qwen3"], failed
