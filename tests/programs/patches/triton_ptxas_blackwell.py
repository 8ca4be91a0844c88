"""The patch's seams pointed at the tree of TREE (its system toolkits and pip layouts), then
``import sglang``: the patch's record and the ptxas variables it set."""
import json
import os
from pathlib import Path

import sglang_shims
from sglang_shims.catalog import load as _catalog

from patch_state import patch_entry

code = _catalog.load_code(_catalog.load().by_id()[os.environ["PATCH_ID"]])
tree = Path(os.environ["TREE"])
code.SYSTEM_GLOBS = ((str(tree), "system-cuda*/bin/ptxas"),)
code.PIP_LAYOUTS = ("nvidia/cu13/bin/ptxas",)
sglang_shims.install()
import sglang

names = ("TRITON_PTXAS_PATH", "TRITON_PTXAS-BLACKWELL_PATH", "TRITON_PTXAS_BLACKWELL_PATH",
         "SGLANG_SHIMS_TRITON_PTXAS")
print(json.dumps({"status": patch_entry(os.environ["PATCH_ID"]),
                  "env": {n: os.environ[n] for n in names if n in os.environ}}))
