"""vllm's real ``_custom_ops`` (0.6.4.post1's, without its ``_C`` library, as where that
cannot load) called as vllm's and sglang's layers call it, on a few shapes and dtypes.

argv[1] is a file: per case, the error, or the arguments as they were before the call, the
caller's tensors after it and whether those are still the caller's storage, saved with
``torch.save`` for the test to compare with its float64 references.  The JSON line says
which module each function now comes from and the patch's state.  With ``with-ops`` as
argv[2], ``torch.ops._C`` gets the six ops (empty kernels) first, as a vllm whose ``_C``
loads."""
import sys

import torch

from patch_state import print_result

NAMES = ("rms_norm", "fused_add_rms_norm", "silu_and_mul", "gelu_and_mul",
         "gelu_tanh_and_mul", "rotary_embedding")
if sys.argv[2:] == ["with-ops"]:
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
cases = {}


def case(name, run, *args):
    try:
        cases[name] = run(*args)
    except Exception as exc:
        cases[name] = {"error": f"{type(exc).__name__}: {exc}"}


def call(op, outputs, *args):
    """Call ``ops.<op>(*args)``; ``outputs`` are the caller's tensors it must write."""
    before = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
    storage = [t.untyped_storage().data_ptr() for t in outputs]
    getattr(ops, op)(*args)
    return {"op": op, "args": before, "outputs": [t.clone() for t in outputs],
            "in_place": storage == [t.untyped_storage().data_ptr() for t in outputs]}


def rms(shape, dtype):
    # small inputs: the mean square is near eps, so a wrong eps shows
    x = (torch.randn(shape) * 3e-3).to(dtype)
    out = torch.full_like(x, float("nan"))
    return call("rms_norm", [out], out, x, torch.randn(shape[-1]).to(dtype), 1e-5)


def fused(shape, dtype):
    x, r = (torch.randn(shape) * 2e-3).to(dtype), (torch.randn(shape) * 2e-3).to(dtype)
    return call("fused_add_rms_norm", [x, r], x, r, torch.randn(shape[-1]).to(dtype), 1e-5)


def act(kind, shape, dtype):
    out = torch.full((*shape[:-1], shape[-1] // 2), float("nan"), dtype=dtype)
    return call(f"{kind}_and_mul", [out], out, (torch.randn(shape) * 2).to(dtype))


def rope(is_neox, rot_dim, dtype, tokens=9, head_size=64, q_heads=4, kv_heads=2):
    # q and k as sglang's attention passes them: column slices of one qkv tensor (the
    # whole qkv is an output: its value columns must come back unchanged)
    q_size, kv_size = q_heads * head_size, kv_heads * head_size
    qkv = torch.randn(tokens, q_size + 2 * kv_size).to(dtype)
    q, k, _ = qkv.split([q_size, kv_size, kv_size], dim=-1)
    positions = torch.randint(0, 40, (tokens,))
    inv_freq = 1.0 / (10000 ** (torch.arange(0, rot_dim, 2, dtype=torch.float) / rot_dim))
    freqs = torch.outer(torch.arange(40, dtype=torch.float), inv_freq)
    cache = torch.cat((freqs.cos(), freqs.sin()), dim=-1).to(dtype)  # vllm's layout
    qkv_before = qkv.clone()
    done = call("rotary_embedding", [q, k, qkv], positions, q, k, head_size, cache, is_neox)
    return {**done, "qkv_before": qkv_before}


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
torch.save(cases, sys.argv[1])
print_result({"modules": {name: getattr(ops, name).__module__ for name in NAMES},
              "errors": {k: v["error"] for k, v in cases.items() if "error" in v}},
             "vllm-custom-ops-standin")
