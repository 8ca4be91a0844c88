"""``from sgl_kernel import <argv[1]>`` and a call of it: prints the call's error, then the
patch's record as JSON."""
import json
import sys

import sgl_kernel

from patch_state import patch_entry

exec(f"from sgl_kernel import {sys.argv[1]} as function")  # sglang's import, by name
try:
    function(None)  # noqa: F821  (bound by the exec above)
except Exception as exc:
    print(type(exc).__name__ + ": " + str(exc))
print(json.dumps(patch_entry("sgl-kernel-missing-symbols")))
