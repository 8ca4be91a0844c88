"""sglang's dual-chunk attention backend, which imports sgl_kernel.sparse_flash_attn's
functions unguarded: a call's error, the patch's state and the absent submodules it saw."""
import fake_cuda
import json

import sglang.srt.layers.attention.dual_chunk_flashattention_backend as backend

from patch_state import patch_entry

try:
    backend.sparse_attn_func(None)
except Exception as exc:
    error = f"{type(exc).__name__}: {exc}"
entry = patch_entry("sgl-kernel-missing-symbols")
print(json.dumps({"error": error, "state": entry["state"],
                  "absent": entry["details"].get("absent_submodules", {})}))
