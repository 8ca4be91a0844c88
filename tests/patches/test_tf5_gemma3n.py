"""tf5-gemma3n-rope and tf5-gemma3n-tie-weights: sglang's Gemma 3n on transformers 5.

tf5-gemma3n-rope -- the layers built from transformers 5 configs.

Two releases, each as its users run it:

* sglang 0.5.1 (pins transformers 4.55.2) moved to transformers 5.24: the whole
  ``Gemma3nForCausalLM`` is built (CUDA branches on, as in the other model tests) and
  every layer's rotary table must equal, bit for bit, the one the same code builds on
  transformers 4.55.2 (run in the same test).
* sglang 0.5.13 on the transformers it pins (5.8.1), on CPU: its ``Gemma3nAttention``
  layers are built with ``get_rope`` recorded; the sliding-window layer must get base 1e4
  and the full-attention layer 1e6 with the default RoPE type.

Stock, both fail with AttributeError on ``rope_local_base_freq``.  The config instance
must come out of the build exactly as it went in.

tf5-gemma3n-tie-weights -- the multimodal model's ``tie_weights`` called the way
transformers 5's ``init_weights`` calls it at the end of every constructor
(``tie_weights(recompute_mapping=False)``), on sglang 0.5.13 with its pinned transformers:
a TypeError stock; patched, passed on to sglang's real text model.  (The whole multimodal
model is not built here: its vision tower needs timm.)
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ..support.programs import FAKE_CUDA
from ..support.run import need
from ._transformers import SINGLE_PROCESS_TP, TRANSFORMERS5, run_json, transformers_paths

pytestmark = pytest.mark.wheels

PATCH = "tf5-gemma3n-rope"
TIE = "tf5-gemma3n-tie-weights"

CONFIG = """
import json, importlib
import transformers
from transformers import Gemma3nTextConfig
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
    import sglang_shims
    result["state"] = sglang_shims.status().get("PATCH", {}).get("state")
    result["config_unchanged"] = sorted(vars(config)) == before
    print(json.dumps(result))
""".replace("PATCH", PATCH)

WHOLE_MODEL = FAKE_CUDA + SINGLE_PROCESS_TP + CONFIG + """
try:
    gemma3n = importlib.import_module("sglang.srt.models.gemma3n_causal")
    model = gemma3n.Gemma3nForCausalLM(config=config, quant_config=None)
    result["layers"] = [[type(l.self_attn.rotary_emb).__name__, l.self_attn.rotary_emb.base,
                         l.self_attn.rotary_emb.cos_sin_cache[[0, 1, 7, 100, 255]].tolist()]
                        for l in model.model.layers]
except Exception as exc:
    result["error"] = f"{type(exc).__name__}: {exc}"
finish()
"""

SGLANG_0513 = CONFIG + """
import tempfile, torch
folder = tempfile.mkdtemp()
config.save_pretrained(folder)  # ServerArgs reads the model's config.json
from sglang.srt import server_args as sa
sa.set_global_server_args_for_scheduler(sa.ServerArgs(model_path=folder, device="cpu"))
from sglang.srt.distributed import parallel_state as ps
ps.init_distributed_environment(world_size=1, rank=0, local_rank=0, backend="gloo",
                                distributed_init_method="file://" + tempfile.mkdtemp() + "/s")
ps.initialize_model_parallel(tensor_model_parallel_size=1)
gemma3n = importlib.import_module("sglang.srt.models.gemma3n_causal")
calls = []
def get_rope(*args, **kwargs):  # records what the layer asks for (a CPU table needs vllm)
    calls.append({"base": kwargs.get("base"), "rope_scaling": kwargs.get("rope_scaling")})
    return torch.nn.Identity()
gemma3n.get_rope = get_rope
"""

SGLANG_0513_RUN = SGLANG_0513 + """
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
    for label, call in (("plain", lambda: model.tie_weights()),
                        ("transformers5", lambda: model.tie_weights(recompute_mapping=False))):
        try:
            call()
            result[label] = "ok"
        except Exception as exc:
            result[label] = f"{type(exc).__name__}: {exc}"
    result["tie_state"] = __import__("sglang_shims").status()["TIE"]["state"]
finish()
""".replace("TIE", TIE)

STOCK_ERROR = "AttributeError: 'Gemma3nTextConfig' object has no attribute 'rope_local_base_freq'"


def run(code: str, paths: tuple[Path, ...], **env: str) -> dict[str, Any]:
    return run_json(code, paths, env, transformers=None)


def test_sglang051_on_transformers5_builds_transformers4s_tables(
        sglang_release: Callable[[str], Path], standin_kernel: Callable[..., Path],
        pypi_release: Callable[[str, str], Path]) -> None:
    need("torch")
    own = (sglang_release("0.5.1"), standin_kernel("0.3.18"))
    tf5 = (*transformers_paths(pypi_release, TRANSFORMERS5), *own)
    stock = run(WHOLE_MODEL, tf5, SGLANG_SHIMS_DISABLE=PATCH)
    assert stock["transformers"] == TRANSFORMERS5 and stock["state"] == "disabled"
    assert stock["error"] == STOCK_ERROR

    patched = run(WHOLE_MODEL, tf5)
    assert patched["state"] == "applied" and "error" not in patched, patched.get("error")
    assert patched["config_unchanged"] is True
    pinned = run(WHOLE_MODEL, own)
    assert pinned["transformers"] == "4.55.2" and pinned["state"] == "not-applicable"
    assert patched["layer_types"] == pinned["layer_types"]
    assert patched["layers"] == pinned["layers"]
    assert [layer[1] for layer in patched["layers"]] == [1e4, 1e4, 1e4, 1e4, 1e6]


def test_sglang0513_on_its_own_transformers_pin(
        sglang_release: Callable[[str], Path], standin_kernel: Callable[..., Path],
        pypi_release: Callable[[str, str], Path]) -> None:
    for module in ("torch", "fastapi", "zmq"):
        need(module)
    from sglang_shims.testing.standin import ops_faked_by

    root = sglang_release("0.5.13")
    paths = (pypi_release("transformers", "5.8.1"), pypi_release("huggingface_hub", "1.5.0"),
             pypi_release("tokenizers", "0.22.2"), root,
             standin_kernel("0.3.21", torch_ops=ops_faked_by(root)))
    stock = run(SGLANG_0513_RUN, paths, SGLANG_SHIMS_DISABLE=PATCH)
    assert stock["transformers"] == "5.8.1" and stock["error"] == STOCK_ERROR

    tie_stock = run(SGLANG_0513_RUN, paths, SGLANG_SHIMS_DISABLE=TIE)
    assert tie_stock["tie_state"] == "disabled" and tie_stock["plain"] == "ok"
    assert tie_stock["transformers5"] == (
        "TypeError: Gemma3nForConditionalGeneration.tie_weights() got an unexpected keyword "
        "argument 'recompute_mapping'")

    patched = run(SGLANG_0513_RUN, paths)
    assert patched["state"] == "applied" and "error" not in patched, patched.get("error")
    assert patched["config_unchanged"] is True
    sliding, full = patched["calls"]
    assert sliding == {"base": 1e4, "rope_scaling": {"rope_type": "default"}}
    assert full["base"] == 1e6 and full["rope_scaling"]["rope_type"] == "default"
    assert full["rope_scaling"]["rope_theta"] == 1e6
    assert patched["tie_state"] == "applied"
    assert patched["plain"] == patched["transformers5"] == "ok"
