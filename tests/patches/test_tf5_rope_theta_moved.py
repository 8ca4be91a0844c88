"""tf5-rope-theta-moved: sglang 0.5.1's RoPE base read from a transformers 5.24 config.

The real sglang 0.5.1 LlamaDecoderLayer reads the base with
``getattr(config, "rope_theta", 10000)`` and builds its RotaryEmbedding through sglang's
get_rope; the rotated query of ``forward_native`` (CPU) is compared with a float64
reference computed here for the config's base, 1e6.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ..support.patch_runs import run_json
from ..support.programs import program
from ..support.transformers5 import TRANSFORMERS5, sglang_paths_fixture

pytestmark = pytest.mark.wheels

PATCH = "tf5-rope-theta-moved"

CODE = program("patches/tf5_rope_theta_moved")

paths = sglang_paths_fixture()


def run(paths: tuple[Path, ...], **env: str) -> dict[str, Any]:
    data = run_json(CODE, paths, env, transformers=TRANSFORMERS5)
    assert data["rotary"] == "RotaryEmbedding"
    return data


def test_stock_sglang_silently_uses_the_default_base(paths: tuple[Path, ...]) -> None:
    data = run(paths, SGLANG_SHIMS_DISABLE=PATCH)
    assert data["state"] == "disabled"
    # getattr(config, "rope_theta", 10000) falls back: the model rotates with base 1e4 ...
    assert data["base"] == 10000.0
    assert data["q_err_1e4"] < 5e-4
    # ... so against the config's base 1e6 the rotated queries are off by ~6 (|q| ~ 3)
    assert data["q_err_1e6"] > 5.0 and data["k_err_1e6"] > 4.0
    assert data["direct"].startswith("AttributeError")
    assert data["gemma"].startswith("AttributeError")
    assert data["partial_rotary_dim"] == 64  # partial_rotary_factor=0.5 ignored too


def test_patched_sglang_rotates_with_the_config_base(paths: tuple[Path, ...]) -> None:
    data = run(paths)
    assert data["state"] == "applied"
    assert data["base"] == 1e6
    # fp32 RoPE at positions up to 4000 against float64: agreement to fp32 rounding
    assert data["q_err_1e6"] < 5e-4 and data["k_err_1e6"] < 5e-4
    assert data["q_err_1e4"] > 5.0
    assert data["direct"] == 1e6
    assert data["gemma"] == 1e6  # full_attention layers' base, as transformers 4 exposed it
    # not every layer type carries it: no answer, as transformers' standardisation expects
    assert data["gemma_partly_missing"].startswith("AttributeError")
    assert data["assigned"] == 123.0
    assert data["partial_rotary_dim"] == 32
