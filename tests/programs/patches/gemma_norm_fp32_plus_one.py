"""A tiny real GemmaForCausalLM of sglang's, loaded from a random bf16 checkpoint through its
own ``load_weights``: each norm module's weight and output against float64 and against
transformers' GemmaRMSNorm holding the same checkpoint weight."""
import fake_cuda
import json
import os
import socket
import sys
import types

import torch

from sglang.srt.models import gemma
from sglang.srt.distributed import parallel_state as ps
from transformers import GemmaConfig
from transformers.models.gemma.modeling_gemma import GemmaRMSNorm as HFGemmaRMSNorm

from patch_state import patch_entry

with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
ps.init_distributed_environment(world_size=1, rank=0, local_rank=0, backend="gloo",
                                distributed_init_method=f"tcp://127.0.0.1:{port}")
ps.initialize_model_parallel(tensor_model_parallel_size=1)

H, INTER, L, HEADS, KV, HD, V = 128, 256, 2, 2, 1, 64, 128
EPS = 1e-6
cfg = GemmaConfig(vocab_size=V, hidden_size=H, intermediate_size=INTER, num_hidden_layers=L,
                  num_attention_heads=HEADS, num_key_value_heads=KV, head_dim=HD,
                  rms_norm_eps=EPS)
torch.set_default_dtype(torch.bfloat16)
model = gemma.GemmaForCausalLM(cfg)
if os.environ.get("STOCK_FINAL_NORM"):  # as if built before the patch applied
    from sglang.srt.layers.layernorm import RMSNorm as StockRMSNorm
    model.model.norm = StockRMSNorm(H, eps=EPS)
torch.set_default_dtype(torch.float32)

gen = torch.Generator().manual_seed(1234)
def rand(*shape, std=0.02):
    return (torch.randn(*shape, generator=gen, dtype=torch.float64) * std).to(torch.bfloat16)

ckpt = {"model.embed_tokens.weight": rand(V, H), "model.norm.weight": rand(H, std=0.05)}
for i in range(L):
    p = f"model.layers.{i}."
    ckpt.update({
        p + "self_attn.q_proj.weight": rand(HEADS * HD, H),
        p + "self_attn.k_proj.weight": rand(KV * HD, H),
        p + "self_attn.v_proj.weight": rand(KV * HD, H),
        p + "self_attn.o_proj.weight": rand(H, HEADS * HD),
        p + "mlp.gate_proj.weight": rand(INTER, H),
        p + "mlp.up_proj.weight": rand(INTER, H),
        p + "mlp.down_proj.weight": rand(H, INTER),
        p + "input_layernorm.weight": rand(H, std=0.05),
        p + "post_attention_layernorm.weight": rand(H, std=0.05),
    })
model.load_weights((name, tensor.clone()) for name, tensor in ckpt.items())
params = dict(model.named_parameters())

x = (torch.randn(256, H, generator=gen, dtype=torch.float64)
     * torch.linspace(0.1, 8.0, 256, dtype=torch.float64)[:, None]).to(torch.bfloat16)
r = torch.randn(256, H, generator=gen, dtype=torch.float64).to(torch.bfloat16)

out = {"norms": {}}
for name, module in model.named_modules():
    if not name.endswith("norm"):
        continue
    w = ckpt[name + ".weight"]                      # the checkpoint weight (bf16)
    scale = (1.0 + w.double())                       # exact 1 + w
    gemma_style = type(module).__name__ == "GemmaRMSNorm"
    # the scale the module actually applies, in float64
    used = (1.0 + module.weight.float()).double() if gemma_style else module.weight.double()
    x64 = x.double()
    ref = x64 * torch.rsqrt(x64.pow(2).mean(-1, keepdim=True) + EPS) * scale
    got = module.forward_native(x.clone()).double()
    hf = HFGemmaRMSNorm(H, eps=EPS)
    with torch.no_grad():
        hf.weight.copy_(w)                           # float32 parameter holding w
    hf_out = hf(x.clone())
    got_res, res_out = module.forward_native(x.clone(), r.clone())
    hf_res = hf((x + r).clone())                     # HF adds the residual in bf16, then norms
    rounded = ref.to(torch.bfloat16).double()        # the correctly rounded bf16 answer
    ulp = torch.exp2(torch.floor(torch.log2(rounded.abs().clamp_min(1e-30))) - 7)
    out["norms"][name] = {
        "type": type(module).__name__,
        "param_is_checkpoint": bool(torch.equal(module.weight.detach(), w)),
        "param_is_bf16_shifted": bool(torch.equal(module.weight.detach(), w + 1.0)),
        "scale_max_err": float((used - scale).abs().max()),
        "max_abs_err": float((got - ref).abs().max()),
        "mean_abs_err": float((got - ref).abs().mean()),
        "max_rel_err": float(((got - ref).abs() / ref.abs().clamp_min(1e-3)).max()),
        "equal_to_rounded_ref": float((got == rounded).double().mean()),
        "max_ulps_from_rounded_ref": float(((got - rounded).abs() / ulp).max()),
        "equal_to_hf": float((got.to(torch.bfloat16) == hf_out).float().mean()),
        "residual_equal_to_hf": float((got_res == hf_res).float().mean()),
        "residual_sum_exact": bool(torch.equal(res_out, x + r)),
    }
out["weights_match"] = all(
    torch.equal(params[n].detach(), t) for n, t in ckpt.items()
    if "norm" not in n and n in params)
if "sglang_shims" in sys.modules:
    entry = patch_entry("gemma-norm-fp32-plus-one")
    out["state"], out["changes"] = entry["state"], entry["changes"]
print(json.dumps(out))
