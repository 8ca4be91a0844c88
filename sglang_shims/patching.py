"""What patch code (``patches/<id>/patch.py``) may import from sglang-shims.

A patch module defines ``apply(ctx: PatchContext) -> None`` and changes things only
through ``ctx`` so that every change can be rolled back and reported.
"""

from ._annotations import keep_as_class_attributes
from ._apply import PatchContext, Retired
from ._proxy import MissingSymbolError, OptionalSymbol

__all__ = ["MissingSymbolError", "OptionalSymbol", "PatchContext", "Retired",
           "keep_as_class_attributes"]
