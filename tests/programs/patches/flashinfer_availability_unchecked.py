"""sglang's layernorm, cut from a release (the first argument names the module): does it
import, and what does ``is_flashinfer_available()`` answer.  CUDA is faked, as on the
matrix's CPU runs; the patch's state is printed too."""
import fake_cuda

import importlib
import json
import sys

from patch_state import patch_entry

out = {}
try:
    importlib.import_module(sys.argv[1])
    out["imported"] = True
except ImportError as exc:
    out["error"] = f"{type(exc).__name__}: {exc}"
from sglang.srt import utils

out["available"] = bool(utils.is_flashinfer_available())
entry = patch_entry("flashinfer-availability-unchecked") or {}
out["state"], out["reason"] = entry.get("state"), entry.get("reason")
print(json.dumps(out))
