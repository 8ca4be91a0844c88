"""vllm's real ``triton_utils/custom_cache_manager.py`` imported before sglang's utils (as
sglang 0.4.0 does), on the installed triton: its manager's folders against triton's
knobs, then sglang's import line; and both patches' end states."""
import json

from patch_state import patch_entry

out = {}
try:
    from vllm.triton_utils import custom_cache_manager as ccm
except ImportError as exc:
    print(json.dumps({"error": str(exc)}))
    raise SystemExit from None
from triton import knobs

out["knobs"] = [knobs.cache.dir, knobs.cache.dump_dir, knobs.cache.override_dir]
out["managers"] = [ccm.CustomCacheManager("k", dump=True).cache_dir,
                   ccm.CustomCacheManager("k", override=True).cache_dir]
import sglang.srt.utils as u

out["sglang"] = [u.default_cache_dir(), u.default_dump_dir(), u.default_override_dir()]
for key, patch in (("vllm", "vllm-triton-cache-helpers-removed"),
                   ("utils", "triton-cache-helpers-removed")):
    entry = patch_entry(patch) or {}
    out[key] = {"state": entry.get("state"), "notes": entry.get("notes", []),
                "changes": entry.get("changes", [])}
print(json.dumps(out))
