"""What patch code (``patches/<id>/patch.py``) may import from sglang-shims.

A patch module defines ``apply(ctx: PatchContext) -> None`` and changes things only
through ``ctx`` so that every change can be rolled back and reported.
"""

from ..engine.journal import PatchContext, Retired
from ..engine.proxy import MissingSymbolError, OptionalSymbol
from .transformers5 import keep_as_class_attributes

__all__ = ["MissingSymbolError", "OptionalSymbol", "PatchContext", "Retired",
           "keep_as_class_attributes"]
