"""sglang-jit-activation-fallback: with RoPE served, sglang 0.5.13's MLP is next.

``test_sglang_jit_rope_fallback.test_0513_batch_matches_transformers`` serves sglang
0.5.13's own Qwen3 and Llama with no kernel and asserts this patch applied; here the same
run with only this patch disabled must get past RoPE and stop at sglang's JIT activation op.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ..support.model_forward import check_stops_at

pytestmark = pytest.mark.wheels


def test_without_the_patch_the_first_mlp_fails(sglang0513: tuple[Path, ...]) -> None:
    check_stops_at(sglang0513, "sglang-jit-activation-fallback",
                   "sglang::_run_activation_inplace", past="sglang::apply_rope_inplace")
