"""A small Gemma 3n text config (five layers, the last one full attention), the result a
program fills, and ``finish``: the patch's state, whether the config came out of the build
as it went in, and the result printed."""
import importlib
import json

import transformers
from transformers import Gemma3nTextConfig

from patch_state import print_result

config = Gemma3nTextConfig(
    vocab_size=128, vocab_size_per_layer_input=128, hidden_size=256, intermediate_size=256,
    num_hidden_layers=5, num_attention_heads=4, num_key_value_heads=2, head_dim=64,
    max_position_embeddings=256, sliding_window=16, rope_theta=1e6, rope_local_base_freq=1e4,
    num_kv_shared_layers=0, laurel_rank=8, altup_num_inputs=4,
    hidden_size_per_layer_input=16, activation_sparsity_pattern=[0.0] * 5,
    architectures=["Gemma3nForCausalLM"])
before = sorted(vars(config))
result = {"transformers": transformers.__version__, "layer_types": config.layer_types}


def finish():
    result["config_unchanged"] = sorted(vars(config)) == before
    print_result(result, "tf5-gemma3n-rope")
