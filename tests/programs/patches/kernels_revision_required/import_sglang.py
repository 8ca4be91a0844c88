"""``import sglang`` on a fresh install, then the revision transformers' hub-kernel table
resolves its RMSNorm entry to, and an entry that names a version."""
import json

from patch_state import print_result

result = {}
try:
    import sglang
    result["import"] = "ok " + sglang.__version__
    from kernels import LayerRepository, Mode
    from transformers.integrations import hub_kernels
    entry = hub_kernels._KERNEL_MAPPING["RMSNorm"]["cuda"][Mode.INFERENCE]
    result["table_entry"] = entry._resolve_revision()
    pinned = LayerRepository(repo_id="kernels-community/activation", layer_name="Silu",
                             version=1)
    result["explicit"] = [pinned._revision, pinned._version]
except Exception as exc:
    result["import"] = f"{type(exc).__name__}: {exc}"
import sglang_shims
import kernels
import transformers

result["versions"] = [kernels.__version__, transformers.__version__]
print_result(result, "kernels-revision-required")
