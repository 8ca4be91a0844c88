"""How a patch test's program reads the patch's end state: from ``status()``, by its id."""
import json


def patch_entry(patch_id):
    """The patch's ``status()`` entry here, or None where the shims are not active."""
    try:
        import sglang_shims
        return sglang_shims.status()[patch_id]
    except Exception:
        return None


def print_result(result, patch_id):
    """Print ``result`` as the last JSON line, with ``result["state"]``: the patch's state,
    None where the shims are not active."""
    entry = patch_entry(patch_id)
    result["state"] = None if entry is None else entry["state"]
    print(json.dumps(result))
