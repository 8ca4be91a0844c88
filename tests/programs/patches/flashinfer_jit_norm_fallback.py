"""Which ``fused_add_rmsnorm`` sglang's layernorm module took, and the patch's state."""
import fake_cuda
import json

import sglang_shims
from sglang.srt.layers import layernorm

from patch_state import patch_entry

print(json.dumps({"state": patch_entry("flashinfer-jit-norm-fallback")["state"],
                  "module": layernorm.fused_add_rmsnorm.__module__}))
