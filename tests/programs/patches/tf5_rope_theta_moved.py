"""sglang 0.5.1's LlamaDecoderLayer built from a config with rope_theta 1e6: the base its
RotaryEmbedding uses, its rotated queries and keys against float64 RoPE for two bases, and
what ``rope_theta`` reads as on a few configs."""
import fake_cuda
import single_process_tp
import json

import torch
import transformers
from transformers import Gemma3TextConfig, LlamaConfig
from sglang.srt.models import llama

from patch_state import print_result


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
print_result({
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
}, "tf5-rope-theta-moved")
