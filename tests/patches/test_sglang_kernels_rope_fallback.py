"""sglang-kernels-rope-fallback: sglang 0.5.17's own Qwen3 and Llama serve with no kernel.

The real sglang 0.5.17 wheel in the environment it declares (the compatibility matrix's
overlay), today's torch, no sgl_kernel: the Triton fallback stands in for sgl_kernel, and
RoPE -- which 0.5.17 runs through its own JIT CUDA kernel in ``sglang.kernels`` -- goes to
the fallback's RoPE.  The matrix's model check (one prefill and two decode steps through
sglang's model classes, KV pools and torch-native attention, tokens checked against
transformers) must pass; with only this patch disabled it must fail at sglang's JIT op.

The adapters themselves (``kernels._rope.sglang_apply_rope``/``sglang_rotary_embedding``,
shared with ``sglang-jit-rope-fallback``) are checked here against float64 RoPE written in
this file, on the calls sglang makes: partial rotary as a strided slice of each head,
interleaved pairs, the fused KV-cache store into ``[slots, kv_heads * head_dim]`` buffers
with int32 locations, and vLLM's ``rotary_embedding`` with a cache in the query's dtype.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ..conftest import FAKE_CUDA, need, run_python

PROBE = Path(__file__).resolve().parent.parent / "data" / "matrix_probe.py"
PATCH = "sglang-kernels-rope-fallback"


@pytest.fixture(scope="module")
def paths() -> tuple[Path, ...]:
    for module in ("torch", "transformers", "fastapi", "zmq", "uv"):
        need(module)
    from sglang_shims.testing import wheels

    from ..matrix import run

    root = wheels.unpack("sglang", "0.5.17")
    return (run.overlay("0.5.17", root, None) / "site", root)


def model_check(paths: tuple[Path, ...], **env: str) -> dict[str, object]:
    result = run_python(FAKE_CUDA + PROBE.read_text(encoding="utf-8"), paths=paths,
                        env={"MATRIX_MODEL": "1", "SGLANG_SHIMS_KERNEL_BACKEND": "torch", **env},
                        timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    data = result.json()
    assert isinstance(data, dict)
    return data


@pytest.mark.wheels
def test_model_serves_through_the_fallback_rope(paths: tuple[Path, ...]) -> None:
    data = model_check(paths)
    assert data["kernel_loaded"] == "fallback"
    assert PATCH in data["acted"], data
    assert "sglang-kernels-activation-fallback" in data["acted"], data  # the MLP's op
    model = data["model"]
    assert isinstance(model, dict) and model["ok"] is True, model


@pytest.mark.wheels
def test_without_the_patch_the_first_rope_fails(paths: tuple[Path, ...]) -> None:
    data = model_check(paths, SGLANG_SHIMS_DISABLE=PATCH)
    assert PATCH not in data["acted"]
    model = data["model"]
    assert isinstance(model, dict) and model["ok"] is False
    assert "sglang::apply_rope_inplace" in str(model["error"]), json.dumps(model)
