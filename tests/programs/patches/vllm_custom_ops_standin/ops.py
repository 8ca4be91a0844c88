"""vllm's real ``_custom_ops`` (0.6.4.post1's, without its ``_C`` library, as where that
cannot load) called as vllm's and sglang's layers call it, on a few shapes and dtypes: per
case, the error, or the largest difference from the float64 reference (relative to the
reference's largest value) and whether every output was written in place; which module
each function now comes from; and the patch's state.  With ``with-ops`` as argv[1],
``torch.ops._C`` gets the six ops (empty kernels) first, as a vllm whose ``_C`` loads."""
import sys

import torch
from reference import act_ref, fused_add_ref, rms_ref, rope_ref

from patch_state import print_result

NAMES = ("rms_norm", "fused_add_rms_norm", "silu_and_mul", "gelu_and_mul",
         "gelu_tanh_and_mul", "rotary_embedding")
if sys.argv[1:] == ["with-ops"]:
    lib = torch.library.Library("_C", "FRAGMENT")
    for name, schema in (
            ("rms_norm", "(Tensor! out, Tensor input, Tensor weight, float epsilon) -> ()"),
            ("fused_add_rms_norm", "(Tensor! input, Tensor! residual, Tensor weight, "
                                   "float epsilon) -> ()"),
            ("silu_and_mul", "(Tensor! out, Tensor input) -> ()"),
            ("gelu_and_mul", "(Tensor! out, Tensor input) -> ()"),
            ("gelu_tanh_and_mul", "(Tensor! out, Tensor input) -> ()"),
            ("rotary_embedding", "(Tensor positions, Tensor! query, Tensor! key, "
                                 "int head_size, Tensor cos_sin_cache, bool is_neox) -> ()")):
        lib.define(name + schema)
        lib.impl(name, lambda *args: None, "CPU")

from vllm import _custom_ops as ops

torch.manual_seed(0)
result = {"modules": {name: getattr(ops, name).__module__ for name in NAMES}, "cases": {}}


def gap(got, want):
    return float((got.double() - want).abs().max() / want.abs().max())


def case(name, run, *args):
    try:
        result["cases"][name] = run(*args)
    except Exception as exc:
        result["cases"][name] = {"error": f"{type(exc).__name__}: {exc}"}


def rms(shape, dtype):
    # small inputs: the mean square is near eps, so a wrong eps shows
    x = (torch.randn(shape) * 3e-3).to(dtype)
    w = torch.randn(shape[-1]).to(dtype)
    out = torch.full_like(x, float("nan"))
    before = out.data_ptr()
    ops.rms_norm(out, x, w, 1e-5)
    return {"gap": gap(out, rms_ref(x, w, 1e-5)), "in_place": out.data_ptr() == before}


def fused(shape, dtype):
    x, r = (torch.randn(shape) * 2e-3).to(dtype), (torch.randn(shape) * 2e-3).to(dtype)
    w = torch.randn(shape[-1]).to(dtype)
    want_x, want_r = fused_add_ref(x, r, w, 1e-5)
    ptrs = (x.data_ptr(), r.data_ptr())
    ops.fused_add_rms_norm(x, r, w, 1e-5)
    return {"gap": max(gap(x, want_x), gap(r, want_r)),
            "in_place": (x.data_ptr(), r.data_ptr()) == ptrs}


def act(kind, shape, dtype):
    x = (torch.randn(shape) * 2).to(dtype)
    out = torch.full((*shape[:-1], shape[-1] // 2), float("nan"), dtype=dtype)
    before = out.data_ptr()
    getattr(ops, f"{kind}_and_mul")(out, x)
    return {"gap": gap(out, act_ref(kind, x)), "in_place": out.data_ptr() == before}


def rope(is_neox, rot_dim, dtype, tokens=9, head_size=64, q_heads=4, kv_heads=2):
    # q and k as sglang's attention passes them: column slices of one qkv tensor
    q_size, kv_size = q_heads * head_size, kv_heads * head_size
    qkv = torch.randn(tokens, q_size + 2 * kv_size).to(dtype)
    q, k, _ = qkv.split([q_size, kv_size, kv_size], dim=-1)
    positions = torch.randint(0, 40, (tokens,))
    inv_freq = 1.0 / (10000 ** (torch.arange(0, rot_dim, 2, dtype=torch.float) / rot_dim))
    freqs = torch.outer(torch.arange(40, dtype=torch.float), inv_freq)
    cache = torch.cat((freqs.cos(), freqs.sin()), dim=-1).to(dtype)  # vllm's layout
    want_q = rope_ref(positions, q, head_size, cache, is_neox)
    want_k = rope_ref(positions, k, head_size, cache, is_neox)
    untouched = qkv[:, q_size + kv_size:].clone()
    ops.rotary_embedding(positions, q, k, head_size, cache, is_neox)
    return {"gap": max(gap(q, want_q), gap(k, want_k)),
            "in_place": bool(torch.equal(qkv[:, q_size + kv_size:], untouched))}


for dtype, tag in ((torch.float32, "fp32"), (torch.bfloat16, "bf16")):
    case(f"rms_norm {tag}", rms, (7, 64), dtype)
    case(f"rms_norm 3d {tag}", rms, (3, 5, 128), dtype)
    case(f"fused_add_rms_norm {tag}", fused, (6, 96), dtype)
    for kind in ("silu", "gelu", "gelu_tanh"):
        case(f"{kind}_and_mul {tag}", act, kind, (5, 96), dtype)
        case(f"{kind}_and_mul 3d {tag}", act, kind, (2, 3, 64), dtype)
    for is_neox in (True, False):
        for rot_dim in (64, 32):
            case(f"rotary_embedding neox={is_neox} rot_dim={rot_dim} {tag}",
                 rope, is_neox, rot_dim, dtype)
print_result(result, "vllm-custom-ops-standin")
