"""Import a module the patch is about, recording whether that worked."""
import importlib


def import_attempt(result, module):
    """The module, or None after a failure; ``result["import"]`` is "ok" or the error."""
    try:
        imported = importlib.import_module(module)
    except Exception as exc:
        result["import"] = f"{type(exc).__name__}: {exc}"
        return None
    result["import"] = "ok"
    return imported
