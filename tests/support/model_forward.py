"""sglang's own Qwen3 and Llama serving a batch on CPU, against transformers.

The harness is ``tests/programs/model_forward.py``: a ragged batch of 8 prompts in one
prefill, then 4 decode steps, through sglang's real KV-cache pools and one of its real
attention backends, with no sgl_kernel installed (the fallback stands in for it).
"""

from __future__ import annotations

from pathlib import Path

from .programs import program
from .run import Result, run_python


def run_harness(paths: tuple[Path, ...], tier: str, attention: str, **env: str) -> Result:
    """The harness in a fresh interpreter; ``tier``: "torch" (our ops' PyTorch path) or
    Triton's interpreter; ``env`` on top (``SGLANG_SHIMS_DISABLE=...``)."""
    env = {"H2_BACKEND": attention, **env}
    env.update({"TRITON_INTERPRET": "1"} if tier != "torch"
               else {"SGLANG_SHIMS_KERNEL_BACKEND": "torch"})
    return run_python(program("model_forward"), paths=paths, env=env, timeout=900,
                      fork=True)


def check_stops_at(paths: tuple[Path, ...], patch: str, op: str, *, past: str = "") -> None:
    """With only ``patch`` disabled, the harness (our ops' PyTorch path, torch-native
    attention) fails at sglang's torch op ``op``: that patch is what serves it.  ``past``:
    an op the run must have got past (it is not what failed)."""
    result = run_harness(paths, "torch", "torch_native", SGLANG_SHIMS_DISABLE=patch)
    assert result.returncode != 0
    assert op in result.stderr, result.stderr[-3000:]
    if past:
        assert past not in result.stderr, result.stderr[-3000:]


def serve(paths: tuple[Path, ...], tier: str, attention: str) -> dict[str, object]:
    """The harness's JSON, checked: every greedy token equal to transformers', every logit
    within 1e-4, for both models."""
    result = run_harness(paths, tier, attention)
    assert result.returncode == 0, result.stderr[-3000:]
    data = result.json()
    assert isinstance(data, dict)
    assert data["fallback"] == "sgl_kernel is not installed"
    assert data["backend"] == attention
    for model in ("qwen3", "llama"):
        got = data["models"][model]
        assert got["identical"] == got["of"] == 8, data
        assert got["max_logit_diff"] < 1e-4, data
    return data
