"""gemma-norm-fp32-plus-one: numbers, on the real sglang 0.5.1 Gemma model, on CPU.

A tiny real ``GemmaForCausalLM`` (sglang 0.5.1's ``models/gemma.py`` and
``layers/layernorm.py``, a stand-in sgl-kernel 0.3.18, a one-process gloo group) loads a
random bf16 checkpoint in Hugging Face naming through its own ``load_weights``; the
norm weights are drawn from N(0, 0.05), as trained Gemma deltas are small.  Every norm
module then runs its PyTorch-native forward (the CPU path; the CUDA kernels compute
the same fp32 ``1 + w``) on random bf16 hidden states, and is compared with

* a float64 reference, ``x / rms(x) * (1 + w)`` in float64 from the checkpoint ``w``;
* transformers' ``GemmaRMSNorm`` (4.55) holding the same checkpoint weight.

sglang is made to believe it runs on CUDA (as in tests/wheels/test_serving_graph.py) only so
that ``layers/layernorm.py`` takes its sgl-kernel imports instead of vLLM's.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ..support.programs import program
from ..support.run import need, run_python

pytestmark = pytest.mark.wheels

PATCH = "gemma-norm-fp32-plus-one"

CODE = program("patches/gemma_norm_fp32_plus_one")


def measure(paths: tuple[Path, ...], **env: str) -> dict[str, Any]:
    for module in ("torch", "transformers"):
        need(module)
    result = run_python(CODE, paths=paths, env=env, timeout=600, fork=True)
    assert result.returncode == 0, result.stderr[-4000:]
    data = result.json()
    assert isinstance(data, dict)
    return data


@pytest.fixture(scope="module")
def paths(sglang_release: Callable[[str], Path],
          standin_kernel: Callable[..., Path]) -> tuple[Path, ...]:
    return (sglang_release("0.5.1"), standin_kernel("0.3.18"))


@pytest.fixture(scope="module")
def stock(paths: tuple[Path, ...]) -> dict[str, Any]:
    return measure(paths)  # the patch is off by default


@pytest.fixture(scope="module")
def patched(paths: tuple[Path, ...]) -> dict[str, Any]:
    return measure(paths, SGLANG_SHIMS_ENABLE=PATCH)


NORMS = ["model.layers.0.input_layernorm", "model.layers.0.post_attention_layernorm",
         "model.layers.1.input_layernorm", "model.layers.1.post_attention_layernorm",
         "model.norm"]


def test_off_by_default_and_applied_when_enabled(stock: dict[str, Any],
                                                 patched: dict[str, Any]) -> None:
    assert stock["state"] == "disabled"
    assert patched["state"] == "applied"
    assert patched["changes"] == ["setattr sglang.srt.models.gemma.RMSNorm",
                                  "setattr GemmaForCausalLM.load_weights"]
    assert sorted(patched["norms"]) == sorted(stock["norms"]) == sorted(NORMS)
    assert stock["weights_match"] and patched["weights_match"]  # other weights untouched


def test_checkpoint_weight_kept_exactly(stock: dict[str, Any], patched: dict[str, Any]) -> None:
    for name in NORMS:
        s, p = stock["norms"][name], patched["norms"][name]
        assert (s["type"], p["type"]) == ("RMSNorm", "GemmaRMSNorm")
        assert s["param_is_bf16_shifted"] and not s["param_is_checkpoint"]
        assert p["param_is_checkpoint"]


def test_scale_is_exact_in_fp32(stock: dict[str, Any], patched: dict[str, Any]) -> None:
    """The (1 + w) each path multiplies by, against float64: bf16 rounding vs exact."""
    for name in NORMS:
        stock_err = stock["norms"][name]["scale_max_err"]
        # 1 + w in [0.8, 1.2]: bf16 spacing 2**-7 above 1, 2**-8 below -> error <= 2**-8
        assert 2.0 ** -10 < stock_err <= 2.0 ** -8
        assert patched["norms"][name]["scale_max_err"] == 0.0


def test_output_error_against_float64(stock: dict[str, Any], patched: dict[str, Any]) -> None:
    """Both paths round the output to bf16; only the stock path also carries the error of
    the bf16-rounded weight.  Measured on sglang 0.5.1 / torch 2.14.1 (seeded): stock
    max relative error 0.0074 and 72-75 % of outputs equal to the correctly rounded
    float64 result; patched 0.0039 (the bf16 half-ulp bound) and 100 %."""
    for name in NORMS:
        s, p = stock["norms"][name], patched["norms"][name]
        assert p["max_rel_err"] <= 2.0 ** -8, (name, p)  # output rounding alone
        assert s["max_rel_err"] >= 1.5 * 2.0 ** -8, (name, s)
        assert p["max_rel_err"] < 0.6 * s["max_rel_err"]
        assert p["equal_to_rounded_ref"] >= 0.999, (name, p)
        assert s["equal_to_rounded_ref"] <= 0.8, (name, s)
        assert p["max_ulps_from_rounded_ref"] <= 1.0


def test_agrees_with_transformers(stock: dict[str, Any], patched: dict[str, Any]) -> None:
    for name in NORMS:
        s, p = stock["norms"][name], patched["norms"][name]
        assert p["equal_to_hf"] == 1.0 and p["residual_equal_to_hf"] == 1.0
        assert p["residual_sum_exact"]
        assert s["equal_to_hf"] < 0.9  # the stock path differs from transformers widely


def test_norm_built_before_the_patch_keeps_the_stock_shift(paths: tuple[Path, ...]) -> None:
    """A model whose final norm is still a stock RMSNorm (built before the patch applied):
    that weight is loaded the stock way (1 + w), the GemmaRMSNorm ones unshifted."""
    data = measure(paths, SGLANG_SHIMS_ENABLE=PATCH, STOCK_FINAL_NORM="1")
    final = data["norms"]["model.norm"]
    assert final["type"] == "RMSNorm" and final["param_is_bf16_shifted"]
    for name in NORMS[:-1]:
        assert data["norms"][name]["type"] == "GemmaRMSNorm"
        assert data["norms"][name]["param_is_checkpoint"]
