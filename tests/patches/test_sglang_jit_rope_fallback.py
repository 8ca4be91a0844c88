"""sglang-jit-rope-fallback: sglang 0.5.9's own Qwen3 and Llama serve with no kernel installed.

The real sglang 0.5.9 wheel in the environment it declares (the compatibility matrix's
overlay: flashinfer-python, apache-tvm-ffi, ...), today's torch, no sgl_kernel: the Triton
fallback stands in for sgl_kernel, and RoPE -- which 0.5.9 runs through its own JIT CUDA
kernel -- goes to the fallback's RoPE.  The matrix's model check (one prefill and two
decode steps through sglang's model classes, KV pools and torch-native attention, tokens
checked against transformers) must pass; with only this patch disabled it must fail at
sglang's JIT op.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ..conftest import FAKE_CUDA, need, run_python

pytestmark = pytest.mark.wheels

PROBE = Path(__file__).resolve().parent.parent / "data" / "matrix_probe.py"


@pytest.fixture(scope="module")
def paths() -> tuple[Path, ...]:
    for module in ("torch", "transformers", "fastapi", "zmq", "uv"):
        need(module)
    from sglang_shims.testing import wheels

    from ..matrix import run

    root = wheels.unpack("sglang", "0.5.9")
    return (run.overlay("0.5.9", root, None) / "site", root)


def model_check(paths: tuple[Path, ...], **env: str) -> dict[str, object]:
    result = run_python(FAKE_CUDA + PROBE.read_text(encoding="utf-8"), paths=paths,
                        env={"MATRIX_MODEL": "1", "SGLANG_SHIMS_KERNEL_BACKEND": "torch", **env},
                        timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    data = result.json()
    assert isinstance(data, dict)
    return data


def test_model_serves_through_the_fallback_rope(paths: tuple[Path, ...]) -> None:
    data = model_check(paths)
    assert data["kernel_loaded"] == "fallback"
    assert "sglang-jit-rope-fallback" in data["acted"], data
    model = data["model"]
    assert isinstance(model, dict) and model["ok"] is True, model


def test_without_the_patch_the_first_rope_fails(paths: tuple[Path, ...]) -> None:
    data = model_check(paths, SGLANG_SHIMS_DISABLE="sglang-jit-rope-fallback")
    assert "sglang-jit-rope-fallback" not in data["acted"]
    model = data["model"]
    assert isinstance(model, dict) and model["ok"] is False
    assert "sglang::apply_rope_pos_ids_cos_sin_cache_without_kv_cache" in str(model["error"]), \
        json.dumps(model)
