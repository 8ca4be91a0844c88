"""Import sglang's HF3FS storage backend (0.4.10's own modules on the path), then build a
client as the backend would: the import's error, or what building one says."""
import json

from patch_state import patch_entry

out = {}
try:
    from sglang.srt.mem_cache.storage.hf3fs import storage_hf3fs
except Exception as exc:
    out["error"] = f"{type(exc).__name__}: {exc}"
else:
    try:
        storage_hf3fs.Hf3fsClient("/mnt/hf3fs/x", 1 << 20, 1 << 16, 1)
        out["client"] = "built"
    except Exception as exc:
        out["client"] = f"{type(exc).__name__}: {exc}"
entry = patch_entry("hf3fs-client-source-missing") or {}
out["state"], out["reason"] = entry.get("state"), entry.get("reason")
print(json.dumps(out))
