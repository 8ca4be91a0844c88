"""sglang-jit-rope-fallback: sglang 0.5.9's and 0.5.13's own Qwen3 and Llama serve with no
kernel installed.

The real sglang wheel in the environment it declares (the compatibility matrix's overlay:
flashinfer-python, apache-tvm-ffi, ...), today's torch, no sgl_kernel: the Triton fallback
stands in for sgl_kernel, and RoPE -- which these releases run through their own JIT CUDA
kernel in ``sglang.jit_kernel.rope`` -- goes to the fallback's RoPE: for 0.5.9 the function
with sgl-kernel's parameters, for 0.5.10-0.5.16 (0.5.13 here) the adapter for sglang's
new ones.  The matrix's model check (one prefill and two decode steps through sglang's
model classes, KV pools and torch-native attention, tokens checked against transformers)
must pass; with only this patch disabled it must fail at that release's JIT op.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ..conftest import FAKE_CUDA, need, run_python

pytestmark = pytest.mark.wheels

PROBE = Path(__file__).resolve().parent.parent / "data" / "matrix_probe.py"
PATCH = "sglang-jit-rope-fallback"
# release -> the JIT op its first RoPE dies in stock
RELEASES = {"0.5.9": "sglang::apply_rope_pos_ids_cos_sin_cache_without_kv_cache",
            "0.5.13": "sglang::apply_rope_inplace"}


@pytest.fixture(scope="module", params=sorted(RELEASES))
def release(request: pytest.FixtureRequest) -> tuple[str, tuple[Path, ...]]:
    for module in ("torch", "transformers", "fastapi", "zmq", "uv"):
        need(module)
    from sglang_shims.testing import wheels

    from ..matrix import run

    version = str(request.param)
    root = wheels.unpack("sglang", version)
    return version, (run.overlay(version, root, None) / "site", root)


def model_check(paths: tuple[Path, ...], **env: str) -> dict[str, object]:
    result = run_python(FAKE_CUDA + PROBE.read_text(encoding="utf-8"), paths=paths,
                        env={"MATRIX_MODEL": "1", "SGLANG_SHIMS_KERNEL_BACKEND": "torch", **env},
                        timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    data = result.json()
    assert isinstance(data, dict)
    return data


def test_model_serves_through_the_fallback_rope(release: tuple[str, tuple[Path, ...]]) -> None:
    data = model_check(release[1])
    assert data["kernel_loaded"] == "fallback"
    assert PATCH in data["acted"], data
    # from 0.5.11 the MLP runs sglang's JIT activation too (sglang-jit-activation-fallback)
    assert ("sglang-jit-activation-fallback" in data["acted"]) == (release[0] != "0.5.9"), data
    model = data["model"]
    assert isinstance(model, dict) and model["ok"] is True, model


def test_without_the_patch_the_first_rope_fails(release: tuple[str, tuple[Path, ...]]) -> None:
    version, paths = release
    data = model_check(paths, SGLANG_SHIMS_DISABLE=PATCH)
    assert PATCH not in data["acted"]
    model = data["model"]
    assert isinstance(model, dict) and model["ok"] is False
    assert RELEASES[version] in str(model["error"]), json.dumps(model)
