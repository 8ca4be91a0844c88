"""sglang's layernorm, cut from a release (the first argument names the module): does it
import, and what does ``is_flashinfer_available()`` answer.  CUDA is faked, as on the
matrix's CPU runs; the patch's state is printed too."""
import fake_cuda

import json
import sys

from import_attempt import import_attempt
from patch_state import patch_entry

out = {}
import_attempt(out, sys.argv[1])
from sglang.srt import utils

out["available"] = bool(utils.is_flashinfer_available())
entry = patch_entry("flashinfer-availability-unchecked") or {}
out["state"], out["reason"] = entry.get("state"), entry.get("reason")
print(json.dumps(out))
