"""sglang-jit-rope-fallback: sglang 0.5.9's and 0.5.13's own Qwen3 and Llama serve with no
kernel installed.

No sgl_kernel: the Triton fallback stands in for it, and RoPE -- which these releases run
through their own JIT CUDA kernel in ``sglang.jit_kernel.rope`` (nvcc at the first call, a
CUDA-only torch op) -- goes to the fallback's RoPE: for 0.5.9 the function with
sgl-kernel's parameters, for 0.5.10-0.5.16 the stand-in for sglang's new ones.

* 0.5.9, in the environment it declares (the compatibility matrix's overlay): the matrix's
  model check (one prefill and two decode steps through sglang's model classes, KV pools
  and torch-native attention, bf16, tokens checked against transformers) passes, and with
  only this patch disabled fails at 0.5.9's JIT op.
* 0.5.13 (its MLP also needs ``sglang-jit-activation-fallback``), on the environment the
  0.5.17 tests build: ``tests/wheels/test_model_forward.py``'s batch (8 prompts, prefill and 4
  decode steps, float32) gives every greedy token of transformers, and with only this
  patch disabled stops at 0.5.13's JIT op.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ..support.model_forward import check_stops_at, serve
from ..support.stacks import model_check, overlay_paths

pytestmark = pytest.mark.wheels

PATCH = "sglang-jit-rope-fallback"


@pytest.fixture(scope="module")
def paths() -> tuple[Path, ...]:
    return overlay_paths("0.5.9")


def test_model_serves_through_the_fallback_rope(paths: tuple[Path, ...]) -> None:
    data = model_check(paths)
    assert data["kernel_loaded"] == "fallback"
    assert PATCH in data["acted"], data
    model = data["model"]
    assert isinstance(model, dict) and model["ok"] is True, model


def test_without_the_patch_the_first_rope_fails(paths: tuple[Path, ...]) -> None:
    data = model_check(paths, SGLANG_SHIMS_DISABLE=PATCH)
    assert PATCH not in data["acted"]
    model = data["model"]
    assert isinstance(model, dict) and model["ok"] is False
    assert "sglang::apply_rope_pos_ids_cos_sin_cache_without_kv_cache" in str(model["error"]), \
        json.dumps(model)


def test_0513_batch_matches_transformers(sglang0513: tuple[Path, ...]) -> None:
    states = serve(sglang0513, "torch", "torch_native")["states"]
    assert isinstance(states, dict)
    wanted = (PATCH, "sglang-jit-activation-fallback")
    assert {p: states[p] for p in wanted} == {p: "applied" for p in wanted}, states


def test_0513_without_the_patch_the_first_rope_fails(sglang0513: tuple[Path, ...]) -> None:
    check_stops_at(sglang0513, PATCH, "sglang::apply_rope_inplace")
