"""``import outlines.types`` (outlines 0.0.46's own airports module on the path): the
error, or what its airport-code type holds; and the patch's state and notes."""
import json

from patch_state import patch_entry

out = {}
try:
    from outlines.types import airports
except ImportError as exc:
    out["error"] = f"{type(exc).__name__}: {exc}"
else:
    try:
        out["jfk"] = airports.IATA["JFK"].value
        out["codes"] = len(airports.AIRPORT_IATA_LIST)
    except AttributeError as exc:
        out["use"] = str(exc)
entry = patch_entry("outlines-pyairports-removed") or {}
out["state"], out["notes"] = entry.get("state"), entry.get("notes", [])
print(json.dumps(out))
