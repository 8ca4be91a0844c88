"""sglang 0.5.17's serving graph with no sgl_kernel installed: which modules import (argv[1:],
in order), what stands in for the kernel and what the Triton attention backend asks of it
at start-up, as one JSON line."""
import fake_cuda
import json
import sys

from import_each import import_each

results = import_each(sys.argv[1:])
results = {name: text[:500] for name, text in results.items()}
out = {"results": results}
try:
    import sgl_kernel
    import transformers
    import sglang_shims
    from sgl_kernel.utils import is_arch_support_pdl
    import torch
    out["pdl"] = is_arch_support_pdl()
    out["pdl_type"] = type(is_arch_support_pdl).__name__
    out["fallback"] = getattr(sgl_kernel, "__sglang_shims_fallback__", None)
    out["transformers"] = transformers.__version__
    out["states"] = {k: v["state"] for k, v in sglang_shims.status().items()}
    out["rmsnorm_op"] = hasattr(torch.ops.sgl_kernel, "rmsnorm")
except BaseException as exc:
    out["error"] = f"{type(exc).__name__}: {exc}"[:500]
print(json.dumps(out))
