"""``find_spec`` and then the import of each name of argv[1] (JSON), as the import system
answers them: each spec, each module's file, path, loaders and names, or what was raised
and which frames of ours it passed through."""
import importlib
import importlib.util
import json
import sys
import traceback

NAMES = json.loads(sys.argv[1])
out = []
for name in NAMES:
    row = {"name": name}
    try:
        spec = importlib.util.find_spec(name)
        row["spec"] = None if spec is None else {
            "name": spec.name, "origin": spec.origin, "has_location": spec.has_location,
            "locations": None if spec.submodule_search_locations is None
            else list(spec.submodule_search_locations),
            "loader": None if spec.loader is None
            else type(getattr(spec.loader, "loader", spec.loader)).__name__}
    except BaseException as exc:
        row["spec"] = f"raised {type(exc).__name__}: {exc}"
    try:
        module = importlib.import_module(name)
        row["import"] = {"file": getattr(module, "__file__", "<unset>"),
                         "path": list(getattr(module, "__path__", []) or []),
                         "loader": type(module.__loader__).__name__,
                         "spec_loader": type(module.__spec__.loader).__name__,
                         "names": sorted(vars(module))}
    except BaseException as exc:
        frames = traceback.extract_tb(exc.__traceback__)
        row["import"] = f"raised {type(exc).__name__}: {exc}"
        row["our_frames"] = [f"{f.filename.rpartition('/')[2]}:{f.name}" for f in frames
                             if "sglang_shims" in f.filename]
    out.append(row)
print(json.dumps(out))
