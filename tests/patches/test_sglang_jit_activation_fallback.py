"""sglang-jit-activation-fallback: with RoPE served, sglang 0.5.13's MLP is next.

The real-wheel model check of ``test_sglang_jit_rope_fallback.py`` on sglang 0.5.13 (in
the environment it declares, no sgl_kernel): with only this patch disabled the forward
pass gets past RoPE and stops at sglang's JIT activation op; with it, the check passes
(``test_model_serves_through_the_fallback_rope[0.5.13]``, where this patch acts too).
"""

from __future__ import annotations

import json

import pytest

from ..conftest import need
from .test_sglang_jit_rope_fallback import model_check

pytestmark = pytest.mark.wheels

PATCH = "sglang-jit-activation-fallback"


def test_without_the_patch_the_first_mlp_fails() -> None:
    for module in ("torch", "transformers", "fastapi", "zmq", "uv"):
        need(module)
    from sglang_shims.testing import wheels

    from ..matrix import run

    root = wheels.unpack("sglang", "0.5.13")
    data = model_check((run.overlay("0.5.13", root, None) / "site", root),
                       SGLANG_SHIMS_DISABLE=PATCH)
    assert PATCH not in data["acted"]
    assert "sglang-jit-rope-fallback" in data["acted"], data
    model = data["model"]
    assert isinstance(model, dict) and model["ok"] is False
    assert "sglang::_run_activation_inplace" in str(model["error"]), json.dumps(model)

