"""sglang 0.5.1's own Qwen3 and Llama model classes build and run a forward pass on CPU.

No sgl-kernel is installed: ``sgl-kernel-triton-fallback`` stands in for it, so every
``sgl_kernel`` call the models make goes to our ops.  The logits of the last position
must match Hugging Face transformers on the same weights (float32) -- through the
PyTorch path of our ops, and through our Triton kernels run by Triton's CPU
interpreter.  Attention here is plain SDPA over the prompt (the harness's, not sglang's
Triton backend, which needs a GPU); everything else is sglang's code.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import need, run_python

pytestmark = pytest.mark.wheels

FORWARD = (Path(__file__).with_name("data") / "model_forward_harness.py").read_text()


@pytest.fixture(scope="module")
def sglang051(sglang_release: Callable[[str], Path]) -> Path:
    for module in ("torch", "transformers", "triton"):
        need(module)
    return sglang_release("0.5.1")


@pytest.mark.parametrize("tier", ["torch", "triton-interpreter"])
def test_forward_matches_transformers(sglang051: Path, tier: str) -> None:
    env = ({"TRITON_INTERPRET": "1"} if tier != "torch"
           else {"SGLANG_SHIMS_KERNEL_BACKEND": "torch"})
    result = run_python(FORWARD, paths=(sglang051,), env=env, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    data = json.loads(result.stdout.strip().splitlines()[-1])
    assert data["fallback"] == "sgl_kernel is not installed"
    assert data["diff"]["qwen3"] < 1e-5 and data["diff"]["llama"] < 1e-5, data
