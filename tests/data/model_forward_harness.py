# Harness run in a subprocess by tests/test_model_forward.py: fakes CUDA for sglang's
# import-time checks, builds sglang's Qwen3/Llama and transformers' twins on the same
# weights, and prints the max logit difference.  Test-only: not part of the package.
import sys, os, types, importlib, dataclasses, json
import torch
# fake CUDA for sglang's import-time checks
_props = types.SimpleNamespace(name="NVIDIA H100 80GB HBM3", major=9, minor=0, total_memory=80 << 30,
    multi_processor_count=132, warp_size=32, L2_cache_size=50 << 20, max_shared_memory_per_block_optin=232448, gcnArchName="")
torch.cuda.is_available = lambda: True
torch.cuda.device_count = lambda: 1
torch.cuda.current_device = lambda: 0
torch.cuda.get_device_properties = lambda *a, **k: _props
torch.cuda.get_device_capability = lambda *a, **k: (9, 0)
class _S:
    def __init__(self, *a, **k): pass
    def wait_stream(self, *a, **k): pass
torch.cuda.Stream = _S
import contextlib
torch.cuda.current_stream = lambda *a, **k: _S()
torch.cuda.stream = lambda s=None: contextlib.nullcontext()
importlib.import_module("sglang.srt.configs.model_config")
import sgl_kernel
from sglang.srt.distributed import parallel_state as ps
from sglang.srt.layers import dp_attention
ps.init_distributed_environment(world_size=1, rank=0, local_rank=0, distributed_init_method="tcp://127.0.0.1:29544", backend="gloo")
ps.initialize_model_parallel(tensor_model_parallel_size=1)
dp_attention.initialize_dp_attention(server_args=types.SimpleNamespace(enable_dp_attention=False, tp_size=1, dp_size=1, moe_dense_tp_size=None, pp_size=1, device="cpu"),
    model_config=types.SimpleNamespace(hidden_size=256, dtype=torch.float32))

class FakeAttn:
    def forward(self, q, k, v, layer, forward_batch, save_kv_cache=True, **kw):
        n = q.shape[0]
        q = q.view(n, layer.tp_q_head_num, layer.qk_head_dim).transpose(0, 1)
        k = k.view(n, layer.tp_k_head_num, layer.qk_head_dim).transpose(0, 1)
        v = v.view(n, layer.tp_v_head_num, layer.v_head_dim).transpose(0, 1)
        rep = q.shape[0] // k.shape[0]
        k = k.repeat_interleave(rep, 0); v = v.repeat_interleave(rep, 0)
        o = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, scale=layer.scaling)
        return o.transpose(0, 1).reshape(n, -1)

def fb_for(n):
    from sglang.srt.model_executor.forward_batch_info import ForwardBatch, ForwardMode, CaptureHiddenMode
    fb = ForwardBatch.__new__(ForwardBatch)
    for f in ForwardBatch.__dataclass_fields__.values():
        if f.default is not dataclasses.MISSING: setattr(fb, f.name, f.default)
        elif f.default_factory is not dataclasses.MISSING: setattr(fb, f.name, f.default_factory())
        else: setattr(fb, f.name, None)
    fb.forward_mode = ForwardMode.EXTEND; fb.batch_size = 1
    fb.input_ids = torch.arange(n) % 128; fb.positions = torch.arange(n)
    fb.seq_lens = torch.tensor([n]); fb.seq_lens_cpu = torch.tensor([n])
    fb.extend_seq_lens = torch.tensor([n]); fb.extend_seq_lens_cpu = [n]
    fb.extend_prefix_lens = torch.tensor([0]); fb.extend_prefix_lens_cpu = [0]
    fb.extend_start_loc = torch.tensor([0]); fb.extend_num_tokens = n
    fb.return_logprob = False; fb.attn_backend = FakeAttn(); fb.out_cache_loc = torch.arange(n)
    fb.capture_hidden_mode = CaptureHiddenMode.NULL
    return fb

import transformers
from transformers import Qwen3Config, LlamaConfig
tiny = dict(vocab_size=128, hidden_size=256, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=128, rms_norm_eps=1e-6, tie_word_embeddings=False, head_dim=64)
out = {}
for label, modpath, clsname, cfg in (("qwen3", "sglang.srt.models.qwen3", "Qwen3ForCausalLM", Qwen3Config(rope_theta=1e6, **tiny)),
                                     ("llama", "sglang.srt.models.llama", "LlamaForCausalLM", LlamaConfig(rope_theta=1e6, **tiny))):
    cls = getattr(importlib.import_module(modpath), clsname)
    model = cls(config=cfg, quant_config=None)
    torch.manual_seed(0)
    hf = getattr(transformers, clsname)(cfg).eval()
    model.load_weights(list(hf.state_dict().items()))
    fb = fb_for(6)
    with torch.no_grad():
        sg = model(fb.input_ids, fb.positions, fb).next_token_logits[0]
        ref = hf(fb.input_ids.unsqueeze(0)).logits[0, -1]
    out[label] = float((sg - ref).abs().max())
print(json.dumps({"diff": out, "rmsnorm": repr(sgl_kernel.rmsnorm), "fallback": getattr(sgl_kernel, "__sglang_shims_fallback__", None)}))
