"""sglang's ``default_*_dir`` helpers from its ``srt/utils.py`` import line on this triton:
the folders they answer and where they are defined, or the import's error; and the
patch's record."""
import json

from patch_state import patch_entry

out = {}
try:
    from sglang.srt import utils as u
    out["dirs"] = [u.default_cache_dir(), u.default_dump_dir(), u.default_override_dir()]
    out["module"] = u.default_cache_dir.__module__
except ImportError as exc:
    out["error"] = str(exc)
entry = patch_entry("triton-cache-helpers-removed")
out["state"], out["reason"], out["changes"] = entry["state"], entry["reason"], entry["changes"]
print(json.dumps(out))
