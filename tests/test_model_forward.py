"""sglang 0.5.1's own Qwen3 and Llama serve a batch on CPU and agree with transformers.

No sgl-kernel is installed: ``sgl-kernel-triton-fallback`` stands in for it, so every
``sgl_kernel`` call the models make (RMSNorm, fused add + RMSNorm, SiLU-and-mul, RoPE
on the cos/sin cache) goes to our ops.  The harness drives sglang the way its scheduler
does: a ragged batch of 8 prompts (3-40 tokens) in one prefill, then 4 decode steps,
through sglang's real KV-cache pools and one of its real attention backends.  In
float32 every greedy token must equal transformers' ``generate()`` and every logit
must be within 1e-4 of transformers run on the same tokens -- through the PyTorch path
of our ops with sglang's torch-native attention, and through our Triton kernels with
sglang's Triton attention, both run by Triton's CPU interpreter (the same kernels the
GPU compiles).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import FAKE_CUDA, need, run_python

pytestmark = pytest.mark.wheels

SERVE = FAKE_CUDA + (Path(__file__).with_name("data") / "model_forward_harness.py").read_text()


@pytest.fixture(scope="module")
def sglang051(sglang_release: Callable[[str], Path]) -> Path:
    for module in ("torch", "transformers", "triton"):
        need(module)
    return sglang_release("0.5.1")


@pytest.mark.parametrize(("tier", "attention"), [("torch", "torch_native"),
                                                 ("triton-interpreter", "triton")])
def test_batch_serving_matches_transformers(sglang051: Path, tier: str, attention: str) -> None:
    env = {"H2_BACKEND": attention}
    env.update({"TRITON_INTERPRET": "1"} if tier != "torch"
               else {"SGLANG_SHIMS_KERNEL_BACKEND": "torch"})
    result = run_python(SERVE, paths=(sglang051,), env=env, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    data = json.loads(result.stdout.strip().splitlines()[-1])
    assert data["fallback"] == "sgl_kernel is not installed"
    assert data["backend"] == attention
    for model in ("qwen3", "llama"):
        got = data["models"][model]
        assert got["identical"] == got["of"] == 8, data
        assert got["max_logit_diff"] < 1e-4, data
