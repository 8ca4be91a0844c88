"""The revision an older ``kernels`` resolves a table entry without one to (no shims)."""
import json
import warnings

warnings.simplefilter("ignore")
import kernels
from kernels import LayerRepository

entry = LayerRepository(repo_id="kernels-community/liger_kernels", layer_name="LigerRMSNorm")
print(json.dumps({"version": kernels.__version__, "resolved": entry._resolve_revision()}))
