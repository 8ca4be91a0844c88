"""The generated start-up code as ``site`` runs it, then the imports named in argv[2] (JSON).

``site.addsitedir`` reads ``sglang_shims.pth`` from the folder argv[1] (the repository's
``sglang_shims/_activation``, as the wheel lays it out at the top of site-packages) and runs
its line, which imports ``_sglang_shims_start`` from there.  At interpreter start ``site``
runs before the current directory ('' for ``-c``) is put first on ``sys.path``, so it is
taken off meanwhile.  Prints, as JSON: what of ours was loaded before the imports, and after
each one whether it raised (and through which files), and what had woken.
"""
import json
import site
import sys
import traceback

folder, names = sys.argv[1], json.loads(sys.argv[2])
assert sys.path[0] == "", sys.path[:2]
sys.path.pop(0)
site.addsitedir(folder)
sys.path.insert(0, "")


def ours() -> list[str]:
    return sorted(m for m in sys.modules if m.startswith(("sglang_shims", "_sglang_shims")))


def state() -> dict[str, object]:
    boot = sys.modules.get("sglang_shims._bootstrap")
    return {"loaded": ours(),
            "origin": None if boot is None else boot.BOOT.origin,
            "active": None if boot is None else boot.active(),
            "package": getattr(sys.modules.get("sglang_shims"), "__file__", None)}


out: dict[str, object] = {"start": state(), "finders": sum(
    1 for f in sys.meta_path if getattr(f, "sglang_shims_pth", False)), "imports": []}
for name in names:
    row: dict[str, object] = {"name": name, "error": None}
    if name in sys.builtin_module_names:
        sys.modules.pop(name, None)  # asks the finders again, as its first import does
    try:
        __import__(name)
    except ImportError as exc:
        row["error"] = f"{type(exc).__name__}: {exc}"
        row["frames"] = [frame.filename for frame in traceback.extract_tb(exc.__traceback__)]
    row.update(state())
    out["imports"].append(row)  # type: ignore[attr-defined]
print(json.dumps(out))
