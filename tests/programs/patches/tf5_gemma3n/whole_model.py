"""sglang 0.5.1's whole Gemma3nForCausalLM built (CUDA branches on): each layer's rotary
table type, base and a few rows of its cos/sin cache."""
import fake_cuda
import single_process_tp
from gemma3n_config import config, finish, result

import importlib

try:
    gemma3n = importlib.import_module("sglang.srt.models.gemma3n_causal")
    model = gemma3n.Gemma3nForCausalLM(config=config, quant_config=None)
    result["layers"] = [[type(rope).__name__, rope.base,
                         rope.cos_sin_cache[[0, 1, 7, 100, 255]].tolist()]
                        for rope in (layer.self_attn.rotary_emb for layer in model.model.layers)]
except Exception as exc:
    result["error"] = f"{type(exc).__name__}: {exc}"
finish()
