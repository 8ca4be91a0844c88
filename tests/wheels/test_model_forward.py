"""sglang's own Qwen3 and Llama serve a batch on CPU and agree with transformers: 0.5.1,
and 0.5.17 (the release of the GPU machine's torch).

No sgl-kernel is installed: ``sgl-kernel-triton-fallback`` stands in for it, so every
``sgl_kernel`` call the models make (RMSNorm, fused add + RMSNorm, SiLU-and-mul, RoPE
on the cos/sin cache) goes to our ops; 0.5.17 runs RoPE and SiLU-and-mul through its own
JIT CUDA kernels instead, which ``sglang-kernels-rope-fallback`` and
``sglang-kernels-activation-fallback`` send to the same ops.  The harness drives sglang the
way its scheduler does: a ragged batch of 8 prompts (3-40 tokens) in one prefill, then 4
decode steps, through sglang's real KV-cache pools and one of its real attention backends.
In float32 every greedy token must equal transformers' ``generate()`` and every logit
must be within 1e-4 of transformers run on the same tokens -- through the PyTorch path
of our ops with sglang's torch-native attention, and through our Triton kernels run by
Triton's CPU interpreter (the same kernels the GPU compiles): with sglang's Triton
attention on 0.5.1; on 0.5.17 with torch-native attention, since 0.5.17's Triton decode
kernel calls a helper Triton's interpreter cannot run (it compiles on a GPU).

0.5.17 runs on the environment its serving-graph test builds (its pinned transformers and
what its import graph adds, from the same wheel cache: ``tests/support/stacks.py``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ..support.model_forward import serve
from ..support.run import need

pytestmark = pytest.mark.wheels

JIT_PATCHES = ("sglang-kernels-rope-fallback", "sglang-kernels-activation-fallback")


@pytest.mark.parametrize(("tier", "attention"), [("torch", "torch_native"),
                                                 ("triton-interpreter", "triton")])
def test_batch_serving_matches_transformers(sglang051: Path, tier: str, attention: str) -> None:
    for module in ("torch", "transformers", "triton"):
        need(module)
    serve((sglang051,), tier, attention)


@pytest.mark.parametrize("tier", ["torch", "triton-interpreter"])
def test_sglang_0517_batch_serving_matches_transformers(sglang0517: tuple[Path, ...],
                                                        tier: str) -> None:
    need("triton")
    data = serve(sglang0517, tier, "torch_native")
    states = data["states"]
    assert isinstance(states, dict)
    assert {p: states[p] for p in JIT_PATCHES} == {p: "applied" for p in JIT_PATCHES}, states
