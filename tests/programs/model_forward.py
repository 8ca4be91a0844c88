"""sglang's own Qwen3 and Llama classes (0.5.1, and 0.5.17 with its moved-around set-up)
serve a ragged batch of 8 prompts -- one prefill, then decode steps -- through sglang's real
KV-cache pools and one of its real attention backends (H2_BACKEND: torch_native, or triton
run by TRITON_INTERPRET), on transformers' weights.

Prints, per model, the greedy tokens' agreement with transformers' generate() and the
largest logit difference against transformers run teacher-forced on sglang's own
continuation.  It fakes what a CUDA machine and sglang's scheduler would set up, never a
version skew.
"""
import fake_cuda
import contextlib
import dataclasses
import importlib
import inspect
import json
import os
import types

import torch

from batch_serving import cpu_pools, cpu_streams, serve_batch
from with_defaults import with_defaults


cpu_streams()
importlib.import_module("sglang.srt.configs.model_config")
import sgl_kernel
import transformers
from sglang.srt import server_args as sa_module
from sglang.srt.distributed import parallel_state as ps
from sglang.srt.layers import dp_attention

BACKEND = os.environ["H2_BACKEND"]
HEADS, KV_HEADS, HEAD_DIM, LAYERS = 4, 2, 64, 2
LENS = [5, 17, 33, 9, 40, 12, 21, 3]   # ragged, not multiples of any block size
STEPS = 4                              # decode steps after the prefill


def call(fn, **kw):
    """``fn`` with the keywords it takes (releases add and drop set-up parameters)."""
    params = inspect.signature(fn).parameters
    if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        kw = {k: v for k, v in kw.items() if k in params}
    return fn(**kw)


def server_args():
    """sglang's ServerArgs with its field defaults (``__post_init__`` would probe the model
    and the GPU), registered as the global one where the release has that (0.5.17 reads
    it in its layers)."""
    cls = sa_module.ServerArgs
    sa = with_defaults(cls)
    sa.model_path, sa.device, sa.attention_backend = "dummy", "cpu", BACKEND
    sa.tp_size, sa.dp_size, sa.pp_size, sa.page_size = 1, 1, 1, 1
    sa.triton_attention_num_kv_splits = 8
    if hasattr(sa, "cuda_graph_config"):  # 0.5.17: filled by __post_init__
        from sglang.srt.model_executor.cuda_graph_config import default_cuda_graph_config
        sa.cuda_graph_config = default_cuda_graph_config()
    setter = getattr(sa_module, "set_global_server_args_for_scheduler", None)
    if setter is not None:
        setter(sa)
    return sa


SERVER_ARGS = server_args()
with contextlib.suppress(ImportError):  # 0.5.17: the config the scheduler publishes
    call(importlib.import_module("sglang.srt.runtime_context").publish,
         server_args=SERVER_ARGS, role="scheduler")
_cuda_alike = getattr(ps, "is_cuda_alike", None)
if _cuda_alike is not None:  # the groups live on the CPU (else tensors go to cuda:0)
    ps.is_cuda_alike = lambda: False
call(ps.init_distributed_environment, world_size=1, rank=0, local_rank=0, backend="gloo",
     distributed_init_method="file://" + __import__("tempfile").mkdtemp() + "/store")
call(ps.initialize_model_parallel, tensor_model_parallel_size=1)
if _cuda_alike is not None:
    ps.is_cuda_alike = _cuda_alike
dp_attention.initialize_dp_attention(
    server_args=SERVER_ARGS,
    model_config=types.SimpleNamespace(hidden_size=256, dtype=torch.float32,
                                       hf_config=types.SimpleNamespace()))
g = torch.Generator().manual_seed(7)
PROMPTS = [torch.randint(3, 128, (n,), generator=g).tolist() for n in LENS]


def runner(hf_config):
    """What sglang's backends read from a ModelRunner, with real pools on the CPU."""
    from sglang.srt.configs.model_config import AttentionArch
    requests_pool, kv_pool = cpu_pools(call, 16, 256, 2048, torch.float32, KV_HEADS, HEAD_DIM,
                                       LAYERS)
    mr = types.SimpleNamespace(
        device="cpu", gpu_id=0, sliding_window_size=None, token_to_kv_pool_allocator=None,
        req_to_token_pool=requests_pool, token_to_kv_pool=kv_pool, server_args=SERVER_ARGS,
        model_config=types.SimpleNamespace(num_attention_heads=HEADS, context_len=256,
                                           get_num_kv_heads=lambda tp: KV_HEADS,
                                           get_max_num_attention_heads=lambda: HEADS,
                                           is_encoder_decoder=False, hf_config=hf_config,
                                           attention_arch=AttentionArch.MHA,
                                           v_head_dim=HEAD_DIM, swa_v_head_dim=HEAD_DIM,
                                           linear_attn_registry_result=None),
        is_draft_worker=False)
    if BACKEND == "triton":
        from sglang.srt.layers.attention.triton_backend import TritonAttnBackend as Backend
    else:
        from sglang.srt.layers.attention.torch_native_backend import (
            TorchNativeAttnBackend as Backend,
        )
    mr.attn_backend = Backend(mr)
    return mr


tiny = dict(vocab_size=128, hidden_size=256, intermediate_size=256, num_hidden_layers=LAYERS,
            num_attention_heads=HEADS, num_key_value_heads=KV_HEADS, head_dim=HEAD_DIM,
            max_position_embeddings=256, rms_norm_eps=1e-6, tie_word_embeddings=False,
            rope_theta=1e6)
result = {}
for label, module, name in (("qwen3", "sglang.srt.models.qwen3", "Qwen3ForCausalLM"),
                            ("llama", "sglang.srt.models.llama", "LlamaForCausalLM")):
    cfg = getattr(transformers, name.replace("ForCausalLM", "Config"))(**tiny)
    model = getattr(importlib.import_module(module), name)(config=cfg, quant_config=None)
    torch.manual_seed(0)
    hf = getattr(transformers, name)(cfg).eval()
    with torch.no_grad():
        hf.lm_head.weight.mul_(4.0)             # peakier logits: fewer near-ties
    model.load_weights(list(hf.state_dict().items()))
    tokens, logits = serve_batch(model, runner(cfg), PROMPTS, STEPS, 2048)
    worst, identical = 0.0, 0
    for i, prompt in enumerate(PROMPTS):
        with torch.no_grad():
            ref = hf(torch.tensor([prompt + tokens[i][:-1]])).logits[0, len(prompt) - 1:]
            greedy = hf.generate(torch.tensor([prompt]), max_new_tokens=STEPS + 1,
                                 do_sample=False, pad_token_id=0)[0, len(prompt):].tolist()
        worst = max(worst, float((torch.stack(logits[i]) - ref).abs().max()))
        identical += greedy == tokens[i]
    result[label] = {"max_logit_diff": worst, "identical": identical, "of": len(PROMPTS)}
import sglang_shims

print(json.dumps({"backend": BACKEND, "models": result,
                  "fallback": getattr(sgl_kernel, "__sglang_shims_fallback__", None),
                  "states": {k: v["state"] for k, v in sglang_shims.status().items()}}))
