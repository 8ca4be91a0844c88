"""The two allocator variables after ``import sglang``: here, as the package body saw them
(its ``SEEN``) and in a child process, with the patch's record."""
import json
import os
import subprocess
import sys

import sglang
import sglang_shims

from patch_state import patch_entry

NAMES = ("PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF")
entry = patch_entry("alloc-conf-env-mirror")
child = subprocess.run(
    [sys.executable, "-S", "-c",
     f"import json, os; print(json.dumps([os.environ.get(n) for n in {NAMES!r}]))"],
    capture_output=True, text=True, check=True).stdout
print(json.dumps({"env": {n: os.environ.get(n) for n in NAMES},
                  "seen": sglang.SEEN, "child": json.loads(child),
                  "state": entry["state"], "reason": entry["reason"],
                  "changes": entry["changes"], "notes": entry["notes"]}))
