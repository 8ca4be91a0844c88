"""``from sgl_kernel import fused_marlin_moe`` as sglang's AWQ/GPTQ modules do, then a call:
prints what was imported, the call's error, and the patch's record as JSON."""
import json

import sgl_kernel
from sgl_kernel import fused_marlin_moe

from patch_state import patch_entry

print(repr(fused_marlin_moe), fused_marlin_moe.__name__, fused_marlin_moe.__module__)
try:
    fused_marlin_moe(None, None)
except Exception as exc:
    print(type(exc).__name__ + ": " + str(exc))
print(json.dumps(patch_entry("sgl-kernel-fused-marlin-moe")))
