"""sglang 0.5.13 on CPU: two Gemma3nAttention layers built with ``get_rope`` recorded (what
each asks for), then the multimodal model's ``tie_weights`` called as transformers 5's
``init_weights`` calls it."""
from gemma3n_config import config, finish, result

import importlib

import torch

from cpu_world import cpu_world
from patch_state import patch_entry

cpu_world(config)
gemma3n = importlib.import_module("sglang.srt.models.gemma3n_causal")
calls = []


def get_rope(*args, **kwargs):  # records what the layer asks for (a CPU table needs vllm)
    calls.append({"base": kwargs.get("base"), "rope_scaling": kwargs.get("rope_scaling")})
    return torch.nn.Identity()


gemma3n.get_rope = get_rope
try:
    for layer_id in (0, 4):  # a sliding-window layer and the full-attention one
        gemma3n.Gemma3nAttention(layer_id=layer_id, config=config,
                                 max_position_embeddings=256, quant_config=None)
    result["calls"] = list(calls)
except Exception as exc:
    result["error"] = f"{type(exc).__name__}: {exc}"
if "error" not in result:
    # the multimodal model's tie_weights, called as transformers 5's init_weights calls it
    from sglang.srt.models import gemma3n_mm
    model = gemma3n_mm.Gemma3nForConditionalGeneration.__new__(
        gemma3n_mm.Gemma3nForConditionalGeneration)
    torch.nn.Module.__init__(model)
    model.language_model = gemma3n.Gemma3nTextModel(config, None)
    for label, call in (("plain", model.tie_weights),
                        ("transformers5", lambda: model.tie_weights(recompute_mapping=False))):
        try:
            call()
            result[label] = "ok"
        except Exception as exc:
            result[label] = f"{type(exc).__name__}: {exc}"
    result["tie_state"] = patch_entry("tf5-gemma3n-tie-weights")["state"]
finish()
