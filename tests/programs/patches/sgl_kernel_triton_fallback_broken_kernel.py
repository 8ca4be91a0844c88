"""The fallback's record after importing an sgl_kernel that fails to import, and what
stands in for it."""
import json

import sgl_kernel
import sglang_shims

from patch_state import patch_entry

record = patch_entry("sgl-kernel-triton-fallback")
print(json.dumps({"state": record["state"], "reason": record["reason"],
                  "notes": record.get("notes", []),
                  "fallback": getattr(sgl_kernel, "__sglang_shims_fallback__", None)}))
