"""sglang-kernels-rope-fallback: sglang 0.5.17's own Qwen3 and Llama forward with no kernel.

sglang 0.5.17 runs RoPE through its own JIT CUDA kernel in ``sglang.kernels`` (nvcc at
the first call, a CUDA-only torch op).  On the real wheel in the environment
``tests/wheels/test_serving_graph_no_kernel.py`` imports, with no sgl_kernel (the Triton
fallback stands in for it), ``tests/wheels/test_model_forward.py`` serves a batch through
sglang's own Qwen3 and Llama and checks every greedy token against transformers, with this
patch applied (asserted there).  Here the same run with only this patch disabled must fail at
sglang's JIT op: the patch is what makes it pass.

The stand-ins themselves are checked against float64 math in ``test_sglang_jit_adapters``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ..support.model_forward import check_stops_at

pytestmark = pytest.mark.wheels


def test_without_the_patch_the_first_rope_fails(sglang0517: tuple[Path, ...]) -> None:
    check_stops_at(sglang0517, "sglang-kernels-rope-fallback", "sglang::apply_rope_inplace")
