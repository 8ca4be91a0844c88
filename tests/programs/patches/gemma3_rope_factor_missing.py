"""sglang's Gemma3TextModel built on CPU for a 1B-style (unscaled RoPE) and a 4B-style
(linear x8) config: each model's two rotary tables at a few positions, or the error."""
import copy
import importlib
import json

import torch
import transformers
from transformers import Gemma3TextConfig

from cpu_world import cpu_world
from gemma3_rope_tables import rope_tables
from patch_state import print_result

POSITIONS = [0, 1, 7, 100, 1000, 4000]


def make(scaled):
    return Gemma3TextConfig(
        vocab_size=128, hidden_size=256, intermediate_size=256, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=64,
        max_position_embeddings=8192, sliding_window=16, rope_theta=1e6,
        rope_local_base_freq=1e4,
        rope_scaling={"rope_type": "linear", "factor": 8.0} if scaled else None,
        architectures=["Gemma3ForCausalLM"])


cpu_world(make(False))
gemma3 = importlib.import_module("sglang.srt.models.gemma3_causal")
gemma3.get_rope = lambda *a, **k: torch.nn.Identity()  # the layers' own tables: not needed
result = {"transformers": transformers.__version__}
for kind in ("unscaled", "scaled"):
    config = make(kind == "scaled")
    before = copy.deepcopy(config.rope_parameters)
    out = result[kind] = {}
    try:
        model = gemma3.Gemma3TextModel(config=config, quant_config=None)
        out.update(rope_tables(model, POSITIONS))
    except Exception as exc:
        out["error"] = f"{type(exc).__name__}: {exc}"
    out["config_unchanged"] = config.rope_parameters == before
print_result(result, "gemma3-rope-factor-missing")
