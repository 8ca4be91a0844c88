"""sglang-shims: import-time compatibility patches for SGLang.

Installed normally, a ``.pth`` file activates the shims in every Python process and
nothing here needs calling.  The public API is for launchers, notebooks and tests:

* :func:`install` -- activate explicitly (where the ``.pth`` is not processed) and
  patch targets that were imported before;
* :func:`status` -- what each patch did in this process, and why;
* :func:`revert` -- undo every applied patch.

This module is imported by the start-up hook in every process, so it imports
nothing at module level; each function loads the engine on first use.
"""

# No imports here, not even ``typing``: see the docstring.  Patch authors who want
# static types import from ``sglang_shims.patching``.

__all__ = ["ConflictError", "MissingSymbolError", "PatchContext", "Retired", "ShimImportError",
           "__version__", "install", "revert", "status"]


def install() -> "dict[str, dict[str, object]]":
    """Activate the shims in this process and return :func:`status`.

    Idempotent.  Patches whose target is already imported are applied at once and
    marked ``late`` (code that copied a name with ``from X import y`` before keeps
    the old object); patches that must act before their target's body runs fail
    with a reason saying so.
    """
    from .engine import install as _install

    return _install("install")


def status() -> "dict[str, dict[str, object]]":
    """``{patch_id: {"state": ..., "reason": ..., ...}}`` for this process.

    States: ``pending`` (target not imported yet), ``applied``, ``not-applicable``
    (a gate failed; the reason names it and the versions seen), ``retired`` (fixed
    upstream), ``disabled`` (the reason names the variable), ``drifted`` (the target
    no longer matches the fingerprint; left stock), ``failed`` (raised, rolled
    back), ``reverted``.
    """
    from .engine import status as _status

    return _status()


def revert() -> "list[str]":
    """Undo every applied patch in this process, newest first.

    Returns the errors met while undoing (normally none).  Names that other modules
    copied from a patched module keep whatever they copied.
    """
    from .engine import revert as _revert

    return _revert()


def __getattr__(name: str) -> object:
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("sglang-shims")
        except PackageNotFoundError:
            return "0+unknown"
    if name in ("ShimImportError", "ConflictError", "MissingSymbolError"):
        from . import _errors

        return getattr(_errors, name)
    if name in ("PatchContext", "Retired"):
        from . import patching

        return getattr(patching, name)
    # The .pth line's second stage loads the bootstrap (and _toggles) without the import
    # system, which therefore never bound them here: find them where they are.
    import sys

    loaded = sys.modules.get(f"{__name__}.{name}")
    if loaded is not None:
        return loaded
    raise AttributeError(f"module 'sglang_shims' has no attribute {name!r}")
