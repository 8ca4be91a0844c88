"""The remote modeling file of argv[1], imported as transformers' dynamic module loader
imports remote code: its flash-attention class built and run against LlamaAttention."""
import json
import sys

from patch_state import print_result

sys.path.insert(0, sys.argv[1])
import torch
import transformers

result = {"transformers": transformers.__version__}
try:
    import modeling_remote
    from transformers import LlamaConfig
    from transformers.models.llama import modeling_llama as ml
    config = LlamaConfig(hidden_size=64, intermediate_size=128, num_attention_heads=4,
                         num_key_value_heads=2, num_hidden_layers=1, vocab_size=32)
    config._attn_implementation = "eager"  # flash attention needs a GPU; the class is one
    torch.manual_seed(0)
    flash = modeling_remote.ATTENTION_CLASSES["flash_attention_2"](config, 0)
    plain = ml.LlamaAttention(config, 0)
    plain.load_state_dict(flash.state_dict())
    x = torch.randn(1, 5, 64)
    cos_sin = ml.LlamaRotaryEmbedding(config=config)(x, torch.arange(5)[None])
    result["is_llama_attention"] = isinstance(flash, ml.LlamaAttention)
    result["same"] = torch.equal(flash(x, cos_sin, None)[0], plain(x, cos_sin, None)[0])
except Exception as exc:
    result["error"] = f"{type(exc).__name__}: {exc}"
print_result(result, "tf448-llama-flash-attention2-removed")
