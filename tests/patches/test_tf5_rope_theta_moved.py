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

from ._transformers import FAKE_CUDA, SINGLE_PROCESS_TP, run_json, sglang_paths_fixture

pytestmark = pytest.mark.wheels

PATCH = "tf5-rope-theta-moved"

CODE = FAKE_CUDA + SINGLE_PROCESS_TP + """
import json
import transformers
from transformers import Gemma3TextConfig, LlamaConfig
from sglang.srt.models import llama

def tiny(**extra):
    return LlamaConfig(vocab_size=128, hidden_size=256, intermediate_size=256,
                       num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2,
                       max_position_embeddings=4096, rope_theta=1e6, **extra)

def read(obj, name):
    try:
        return getattr(obj, name)
    except AttributeError as exc:
        return "AttributeError: " + str(exc)

def reference(x, base, heads, dim=64):
    # neox-style RoPE in float64 for the given base
    x = x.double().view(len(positions), heads, dim)
    inv = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim))
    angle = positions.double()[:, None, None] * inv
    x1, x2 = x[..., : dim // 2], x[..., dim // 2:]
    out = torch.cat((x1 * angle.cos() - x2 * angle.sin(), x2 * angle.cos() + x1 * angle.sin()), -1)
    return out.view(len(positions), heads * dim)

config = tiny()
rotary = llama.LlamaDecoderLayer(config, layer_id=0).self_attn.rotary_emb
positions = torch.tensor([0, 1, 7, 100, 1000, 4000])
gen = torch.Generator().manual_seed(0)
q = torch.randn(len(positions), 4 * 64, generator=gen)
k = torch.randn(len(positions), 2 * 64, generator=gen)
q_out, k_out = rotary.forward_native(positions, q.clone(), k.clone())

gemma = Gemma3TextConfig()
half_dropped = Gemma3TextConfig()
half_dropped.rope_parameters["full_attention"].pop("rope_theta")
assigned = tiny()
assigned.rope_theta = 123.0

import sglang_shims
print(json.dumps({
    "transformers": transformers.__version__,
    "rotary": type(rotary).__name__,
    "base": float(rotary.base),
    "q_err_1e6": (q_out.double() - reference(q, 1e6, 4)).abs().max().item(),
    "k_err_1e6": (k_out.double() - reference(k, 1e6, 2)).abs().max().item(),
    "q_err_1e4": (q_out.double() - reference(q, 1e4, 4)).abs().max().item(),
    "direct": read(config, "rope_theta"),
    "gemma": read(gemma, "rope_theta"),
    "gemma_partly_missing": read(half_dropped, "rope_theta"),
    "assigned": read(assigned, "rope_theta"),
    "partial_rotary_dim": llama.LlamaDecoderLayer(tiny(partial_rotary_factor=0.5), layer_id=0)
        .self_attn.rotary_emb.rotary_dim,
    "state": sglang_shims.status()[PATCH]["state"],
}))
""".replace("PATCH", repr(PATCH))


paths = sglang_paths_fixture()


def run(paths: tuple[Path, ...], **env: str) -> dict[str, Any]:
    data = run_json(CODE, paths, env)
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
