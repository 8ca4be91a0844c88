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

0.5.17 runs on the environment ``tests/test_serving_graph_0517.py`` builds (its pinned
transformers and what its import graph adds, from the same wheel cache).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from ..support.programs import FAKE_CUDA
from ..support.run import Result, need, run_python
from .test_serving_graph_0517 import release_paths

pytestmark = pytest.mark.wheels

SERVE = FAKE_CUDA + (Path(__file__).with_name("data") / "model_forward_harness.py").read_text()
JIT_PATCHES = ("sglang-kernels-rope-fallback", "sglang-kernels-activation-fallback")


@pytest.fixture(scope="module")
def sglang051(sglang_release: Callable[[str], Path]) -> tuple[Path, ...]:
    for module in ("torch", "transformers", "triton"):
        need(module)
    return (sglang_release("0.5.1"),)


@pytest.fixture(scope="module")
def sglang0517(pypi_release: Callable[[str, str], Path]) -> tuple[Path, ...]:
    for module in ("torch", "triton"):
        need(module)
    return release_paths(pypi_release)


def run_harness(paths: tuple[Path, ...], tier: str, attention: str, **env: str) -> Result:
    """The harness in a fresh interpreter; ``env`` on top (``SGLANG_SHIMS_DISABLE=...``)."""
    env = {"H2_BACKEND": attention, **env}
    env.update({"TRITON_INTERPRET": "1"} if tier != "torch"
               else {"SGLANG_SHIMS_KERNEL_BACKEND": "torch"})
    return run_python(SERVE, paths=paths, env=env, timeout=900)


def serve(paths: tuple[Path, ...], tier: str, attention: str) -> dict[str, object]:
    result = run_harness(paths, tier, attention)
    assert result.returncode == 0, result.stderr[-3000:]
    data = json.loads(result.stdout.strip().splitlines()[-1])
    assert isinstance(data, dict)
    assert data["fallback"] == "sgl_kernel is not installed"
    assert data["backend"] == attention
    for model in ("qwen3", "llama"):
        got = data["models"][model]
        assert got["identical"] == got["of"] == 8, data
        assert got["max_logit_diff"] < 1e-4, data
    return data


@pytest.mark.parametrize(("tier", "attention"), [("torch", "torch_native"),
                                                 ("triton-interpreter", "triton")])
def test_batch_serving_matches_transformers(sglang051: tuple[Path, ...], tier: str,
                                            attention: str) -> None:
    serve(sglang051, tier, attention)


@pytest.mark.parametrize("tier", ["torch", "triton-interpreter"])
def test_sglang_0517_batch_serving_matches_transformers(sglang0517: tuple[Path, ...],
                                                        tier: str) -> None:
    data = serve(sglang0517, tier, "torch_native")
    states = data["states"]
    assert isinstance(states, dict)
    assert {p: states[p] for p in JIT_PATCHES} == {p: "applied" for p in JIT_PATCHES}, states
