"""The real prefill/extend attention kernels of a release on a faked GPU (FAKE_CAPABILITY):
each kernel launch is recorded instead of run, its tiles and options kept (and compiled for
sm_120 to read its shared memory, with COMPILE), with the patch's record."""
import inspect
import json
import os
import sys

import torch

from patch_state import patch_entry

cap = tuple(int(x) for x in os.environ["FAKE_CAPABILITY"].split("."))
torch.cuda.is_available = lambda: True


def get_device_capability(device=None):
    return cap


torch.cuda.get_device_capability = get_device_capability
if os.environ.get("FAKE_HIP"):
    torch.version.hip = "6.2"
if os.environ.get("PRE_IMPORT"):
    import sglang.srt.utils  # before the shims, as an early import would
    import importlib
    importlib.import_module(os.environ["PRE_IMPORT"])
if not os.environ.get("STOCK"):
    import sglang_shims
    sglang_shims.install()  # watches every pending target, whatever the watch table says
import importlib

import sglang.srt.utils  # the patch's target

import triton

COMPILE = bool(os.environ.get("COMPILE"))
out = {"runs": [], "caller_sees": list(torch.cuda.get_device_capability())}


class Recorder:
    def __init__(self):
        self.calls = []

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            self.calls.append((args, kwargs))
        return launch


def shared_bytes(fn, args, kwargs):
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    bound = dict(zip(fn.arg_names, args, strict=False))
    bound.update(kwargs)
    types = {torch.bfloat16: "*bf16", torch.float32: "*fp32", torch.int32: "*i32",
             torch.int64: "*i64"}
    signature, constexprs = {}, {}
    for index, param in enumerate(fn.params):
        value = bound.get(param.name)
        if param.is_constexpr or value is None:
            signature[param.name] = "constexpr"
            constexprs[(index,)] = value
        elif isinstance(value, torch.Tensor):
            signature[param.name] = types[value.dtype]
        elif isinstance(value, float):
            signature[param.name] = "fp32"
        else:
            signature[param.name] = "i32"
    source = ASTSource(fn=fn, signature=signature, constexprs=constexprs)
    options = {"num_warps": kwargs.get("num_warps", 4),
               "num_stages": kwargs.get("num_stages", 3)}
    compiled = triton.compile(source, target=GPUTarget("cuda", 120, 32), options=options)
    return compiled.metadata.shared


def record(module, call, label):
    kernel = module._fwd_kernel
    recorder = Recorder()
    module._fwd_kernel = recorder
    try:
        call()
    finally:
        module._fwd_kernel = kernel
    (args, kwargs), = recorder.calls
    launch = {k: v for k, v in kwargs.items() if isinstance(v, int) and not isinstance(v, bool)}
    launch.update(label)
    if COMPILE:
        launch["shared"] = shared_bytes(kernel, args, kwargs)
    out["runs"].append(launch)


bf16 = torch.bfloat16
for name in json.loads(os.environ["MODULES"]):
    module = importlib.import_module(name)
    out.setdefault("constants", {})[name] = list(module.CUDA_CAPABILITY)
    if name.endswith("prefill_attention"):
        for d in json.loads(os.environ["PREFILL_DIMS"]):
            q = torch.zeros(32, 4, d, dtype=bf16)
            b_start = torch.tensor([0, 16], dtype=torch.int32)
            b_len = torch.tensor([16, 16], dtype=torch.int32)
            # each lambda below is called at once, inside this iteration
            record(module, lambda: module.context_attention_fwd(  # noqa: B023
                q, q.clone(), q.clone(), q.clone(), b_start, b_len, 16),  # noqa: B023
                {"kernel": "prefill", "D": d})
        continue
    for lq, lv in json.loads(os.environ["EXTEND_DIMS"]):
        t, h = 8, 4
        i32, i64 = torch.int32, torch.int64
        qk = lambda: torch.zeros(t, h, lq, dtype=bf16)  # noqa: E731, B023
        vo = lambda: torch.zeros(t, h, lv, dtype=bf16)  # noqa: E731, B023
        given = {
            "q_extend": qk(), "k_extend": qk(), "v_extend": vo(), "o_extend": vo(),
            "k_buffer": qk(), "v_buffer": vo(),
            "req_to_tokens": torch.zeros(1, t, dtype=i32), "b_req_idx": torch.zeros(1, dtype=i32),
            "b_seq_len": torch.tensor([t], dtype=i32),
            "b_seq_len_extend": torch.tensor([t], dtype=i32),
            "b_start_loc_extend": torch.zeros(1, dtype=i32), "max_len_extend": t,
            "qo_indptr": torch.tensor([0, t], dtype=i32),
            "kv_indptr": torch.tensor([0, 0], dtype=i32),
            "kv_indices": torch.zeros(1, dtype=i64), "custom_mask": None, "is_causal": True,
            "mask_indptr": torch.zeros(1, dtype=i64), "k_scale": 1.0, "v_scale": 1.0,
        }
        params = inspect.signature(module.extend_attention_fwd).parameters
        kwargs = {k: given[k] for k, p in params.items() if p.default is inspect.Parameter.empty}
        record(module, lambda: module.extend_attention_fwd(**kwargs),  # noqa: B023
               {"kernel": "extend", "Lq": lq, "Lv": lv})
if "sglang_shims.engine" in sys.modules:
    out["status"] = patch_entry(os.environ["PATCH_ID"])
print(json.dumps(out))
