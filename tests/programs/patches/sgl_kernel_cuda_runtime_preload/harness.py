"""``import sgl_kernel`` with the loader faked (the tree's ``fake_dl``) and the patch's seams
pointed at it (unless STOCK): what was loaded, CUDA_HOME, and the patch's record."""
import json
import os
import sys

import fake_dl
import sglang_shims
from sglang_shims.catalog import load as _catalog

from patch_state import patch_entry

if not os.environ.get("STOCK"):
    code = _catalog.load_code(_catalog.load().by_id()[os.environ["PATCH_ID"]])
    code.load, code.is_loaded = fake_dl.load, fake_dl.is_loaded
    code.on_search_path = fake_dl.on_system_path
    code.DEFAULT_CUDA_HOME = os.environ["DEFAULT_CUDA_HOME"]
    sglang_shims.install()
if os.environ.get("IMPORT_TORCH"):
    import torch
out = {}
try:
    import sgl_kernel
    out["imported"] = True
except Exception as exc:
    out["error"] = f"{type(exc).__name__}: {exc}"
out["loaded"] = {k: v for k, v in fake_dl.LOADED.items() if v != "before"}
out["CUDA_HOME"] = os.environ.get("CUDA_HOME")
if not os.environ.get("STOCK"):
    out["status"] = patch_entry(os.environ["PATCH_ID"])
print(json.dumps(out))
