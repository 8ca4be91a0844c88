"""tf5-gemma3n-rope and tf5-gemma3n-tie-weights: sglang's Gemma 3n on transformers 5.

tf5-gemma3n-rope -- the layers built from transformers 5 configs.

Two releases, each as its users run it:

* sglang 0.5.1 (pins transformers 4.55.2) moved to transformers 5.24: the whole
  ``Gemma3nForCausalLM`` is built (CUDA branches on, as in the other model tests) and
  every layer's rotary table must equal, bit for bit, the one the same code builds on
  transformers 4.55.2 (run in the same test).
* sglang 0.5.13 on the transformers it pins (5.8.1), on CPU: its ``Gemma3nAttention``
  layers are built with ``get_rope`` recorded; the sliding-window layer must get base 1e4
  and the full-attention layer 1e6 with the default RoPE type.

Stock, both fail with AttributeError on ``rope_local_base_freq``.  The config instance
must come out of the build exactly as it went in.

tf5-gemma3n-tie-weights -- the multimodal model's ``tie_weights`` called the way
transformers 5's ``init_weights`` calls it at the end of every constructor
(``tie_weights(recompute_mapping=False)``), on sglang 0.5.13 with its pinned transformers:
a TypeError stock; patched, passed on to sglang's real text model.  (The whole multimodal
model is not built here: its vision tower needs timm.)
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ..support.patch_runs import run_json
from ..support.programs import program
from ..support.run import need
from ..support.transformers5 import TRANSFORMERS5, transformers_paths

pytestmark = pytest.mark.wheels

PATCH = "tf5-gemma3n-rope"
TIE = "tf5-gemma3n-tie-weights"

WHOLE_MODEL = program("patches/tf5_gemma3n/whole_model")
SGLANG_0513_RUN = program("patches/tf5_gemma3n/sglang_0513")

STOCK_ERROR = "AttributeError: 'Gemma3nTextConfig' object has no attribute 'rope_local_base_freq'"


def run(code: str, paths: tuple[Path, ...], **env: str) -> dict[str, Any]:
    return run_json(code, paths, env)


def test_sglang051_on_transformers5_builds_transformers4s_tables(
        sglang_release: Callable[[str], Path], standin_kernel: Callable[..., Path],
        pypi_release: Callable[[str, str], Path]) -> None:
    need("torch")
    own = (sglang_release("0.5.1"), standin_kernel("0.3.18"))
    tf5 = (*transformers_paths(pypi_release, TRANSFORMERS5), *own)
    stock = run(WHOLE_MODEL, tf5, SGLANG_SHIMS_DISABLE=PATCH)
    assert stock["transformers"] == TRANSFORMERS5 and stock["state"] == "disabled"
    assert stock["error"] == STOCK_ERROR

    patched = run(WHOLE_MODEL, tf5)
    assert patched["state"] == "applied" and "error" not in patched, patched.get("error")
    assert patched["config_unchanged"] is True
    pinned = run(WHOLE_MODEL, own)
    assert pinned["transformers"] == "4.55.2" and pinned["state"] == "not-applicable"
    assert patched["layer_types"] == pinned["layer_types"]
    assert patched["layers"] == pinned["layers"]
    assert [layer[1] for layer in patched["layers"]] == [1e4, 1e4, 1e4, 1e4, 1e6]


def test_sglang0513_on_its_own_transformers_pin(
        sglang_release: Callable[[str], Path], standin_kernel: Callable[..., Path],
        pypi_release: Callable[[str, str], Path]) -> None:
    for module in ("torch", "fastapi", "zmq"):
        need(module)
    from sglang_shims.testing.standin import ops_faked_by

    root = sglang_release("0.5.13")
    paths = (pypi_release("transformers", "5.8.1"), pypi_release("huggingface_hub", "1.5.0"),
             pypi_release("tokenizers", "0.22.2"), root,
             standin_kernel("0.3.21", torch_ops=ops_faked_by(root)))
    stock = run(SGLANG_0513_RUN, paths, SGLANG_SHIMS_DISABLE=PATCH)
    assert stock["transformers"] == "5.8.1" and stock["error"] == STOCK_ERROR

    tie_stock = run(SGLANG_0513_RUN, paths, SGLANG_SHIMS_DISABLE=TIE)
    assert tie_stock["tie_state"] == "disabled" and tie_stock["plain"] == "ok"
    assert tie_stock["transformers5"] == (
        "TypeError: Gemma3nForConditionalGeneration.tie_weights() got an unexpected keyword "
        "argument 'recompute_mapping'")

    patched = run(SGLANG_0513_RUN, paths)
    assert patched["state"] == "applied" and "error" not in patched, patched.get("error")
    assert patched["config_unchanged"] is True
    sliding, full = patched["calls"]
    assert sliding == {"base": 1e4, "rope_scaling": {"rope_type": "default"}}
    assert full["base"] == 1e6 and full["rope_scaling"]["rope_type"] == "default"
    assert full["rope_scaling"]["rope_theta"] == 1e6
    assert patched["tie_state"] == "applied"
    assert patched["plain"] == patched["transformers5"] == "ok"
