"""sglang's own Gemma3ForCausalLM built from a Gemma 3 4B-style text config (global RoPE
linear x8 base 1e6, local default base 1e4): both rotary tables at the positions of
argv[1] (JSON), or the build's error."""
import fake_cuda
import single_process_tp
import importlib
import json
import sys

import transformers
from transformers import Gemma3TextConfig
import sglang_shims

from gemma3_rope_tables import rope_tables
from patch_state import print_result

config = Gemma3TextConfig(
    vocab_size=128, hidden_size=256, intermediate_size=256, num_hidden_layers=2,
    num_attention_heads=4, num_key_value_heads=2, head_dim=64, max_position_embeddings=8192,
    sliding_window=16, rope_theta=1e6, rope_local_base_freq=1e4,
    rope_scaling={"rope_type": "linear", "factor": 8.0})
result = {"transformers": transformers.__version__}
try:
    gemma3 = importlib.import_module("sglang.srt.models.gemma3_causal")
    model = gemma3.Gemma3ForCausalLM(config=config, quant_config=None)
    result["build"] = "ok"
except Exception as exc:
    result["build"] = f"{type(exc).__name__}: {exc}"
if result["build"] == "ok":
    result.update(rope_tables(model.model, json.loads(sys.argv[1])))
print_result(result, "tf5-gemma3-rope")
