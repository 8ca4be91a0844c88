"""sglang-kernels-activation-fallback: with RoPE served, sglang 0.5.17's MLP is next.

The same real-wheel model check as ``test_sglang_kernels_rope_fallback.py`` (sglang 0.5.17
in the environment it declares, no sgl_kernel): with only this patch disabled, the forward
pass gets past RoPE and stops at sglang's JIT activation op; with it, the check passes
(``test_model_serves_through_the_fallback_rope`` asserts this patch acted there).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .test_sglang_kernels_rope_fallback import model_check, paths

__all__ = ["paths"]  # the fixture, shared

PATCH = "sglang-kernels-activation-fallback"


@pytest.mark.wheels
def test_without_the_patch_the_first_mlp_fails(paths: tuple[Path, ...]) -> None:
    data = model_check(paths, SGLANG_SHIMS_DISABLE=PATCH)
    assert PATCH not in data["acted"]
    assert "sglang-kernels-rope-fallback" in data["acted"], data
    model = data["model"]
    assert isinstance(model, dict) and model["ok"] is False
    assert "sglang::_run_activation_inplace" in str(model["error"]), json.dumps(model)
