"""The exceptions sglang-shims raises into user code, in one place.

Each says ``sglang_shims`` as its module (as pluggy's do), so a traceback names the
public package rather than the private module that happened to define it; all three are
exported by ``sglang_shims``.  Imports nothing: the engine and the public API share them.
"""


class ShimImportError(ImportError):
    """A patch that had to work did not (strict mode, or policy ``required``)."""


class ConflictError(RuntimeError):
    """Two patches tried to change the same attribute, key or variable in one process."""


class MissingSymbolError(RuntimeError):
    """A proxied name was called, and nothing can stand in for it."""


for _error in (ShimImportError, ConflictError, MissingSymbolError):
    _error.__module__ = "sglang_shims"
del _error
