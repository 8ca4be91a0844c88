"""Import each module of a list, and tell for each whether it imported."""
import importlib


def import_each(modules):
    """{name: "ok" or the error it raised} for each module name, imported in order."""
    results = {}
    for name in modules:
        try:
            importlib.import_module(name)
            results[name] = "ok"
        except BaseException as exc:
            results[name] = f"{type(exc).__name__}: {exc}"
    return results
