"""Import a module made of a release's own ``deep_gemm`` import lines (its name is the
first argument), then ask the stand-in what sglang would: a call, a name and a submodule
outside its surface, and sglang's JIT DeepGEMM switch.  Prints the patch's state too."""
import importlib
import json
import os
import sys

from import_attempt import import_attempt
from patch_state import patch_entry

out = {}
if import_attempt(out, sys.argv[1]) is not None:
    import deep_gemm
    try:
        deep_gemm.get_num_sms()
        out["call"] = "returned"
    except Exception as exc:
        out["call"] = f"{type(exc).__name__}: {exc}"
    try:
        from deep_gemm import get_col_major_tma_aligned_tensor
        out["outside"] = "imported"
    except ImportError as exc:
        out["outside"] = type(exc).__name__
    try:
        importlib.import_module("deep_gemm.jit_kernels.not_in_any_release")
        out["submodule"] = "imported"
    except ImportError as exc:
        out["submodule"] = type(exc).__name__
out["switch"] = os.environ.get("SGL_ENABLE_JIT_DEEPGEMM")
entry = patch_entry("deep-gemm-standin") or {}
out["state"], out["reason"] = entry.get("state"), entry.get("reason")
print(json.dumps(out))
