"""sglang-jit-activation-fallback: with RoPE served, sglang 0.5.13's MLP is next.

``test_sglang_jit_rope_fallback.test_0513_batch_matches_transformers`` serves sglang
0.5.13's own Qwen3 and Llama with no kernel and asserts this patch applied; here the same
run with only this patch disabled must get past RoPE and stop at sglang's JIT activation op.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ..support.model_forward import run_harness

pytestmark = pytest.mark.wheels


def test_without_the_patch_the_first_mlp_fails(sglang0513: tuple[Path, ...]) -> None:
    result = run_harness(sglang0513, "torch", "torch_native",
                         SGLANG_SHIMS_DISABLE="sglang-jit-activation-fallback")
    assert result.returncode != 0
    assert "sglang::_run_activation_inplace" in result.stderr, result.stderr[-3000:]
    assert "sglang::apply_rope_inplace" not in result.stderr
