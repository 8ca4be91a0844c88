"""sglang 0.5.1's import-time AMX probe on this torch: whether ``sglang.srt.utils`` imports,
its answer and the public probe's, and (with the shims on) the patch's state."""
import json
import os

import torch

from patch_state import patch_entry

before = hasattr(torch._C._cpu, "_is_amx_tile_supported")
try:
    import sglang.srt.utils as u
    result = {"ok": True, "amx": bool(u.cpu_has_amx_support()),
              "public": bool(torch.cpu._is_amx_tile_supported()),
              "backend": bool(u.is_intel_amx_backend_available)}
except AttributeError as exc:
    result = {"ok": False, "error": str(exc)}
import sglang_shims

result["before"] = before
if os.environ.get("SGLANG_SHIMS") != "0":
    result["state"] = patch_entry("torch-amx-probe-removed")["state"]
print(json.dumps(result))
