"""sglang's serving graph with no sgl_kernel installed: which modules import (argv[1:], in
order), the fallback's state, and whether the dense path's kernel calls are our kernels,
as one JSON line."""
import fake_cuda
import json
import sys

from import_each import import_each
from patch_state import patch_entry

results = import_each(sys.argv[1:])
out = {"results": {name: text[:500] for name, text in results.items()}}
try:
    import sgl_kernel
    import torch
    out["fallback"] = getattr(sgl_kernel, "__sglang_shims_fallback__", None)
    out["state"] = patch_entry("sgl-kernel-triton-fallback")["state"]
    out["rmsnorm_op"] = hasattr(torch.ops.sgl_kernel, "rmsnorm")
    out["served"] = {name: type(getattr(sgl_kernel, name)).__name__
                     for name in ("rmsnorm", "fused_add_rmsnorm", "silu_and_mul")}
except BaseException as exc:
    out["error"] = f"{type(exc).__name__}: {exc}"[:500]
print(json.dumps(out))
