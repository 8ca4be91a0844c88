"""What patch code (``patches/<id>/patch.py``) may import from sglang-shims.

A patch module defines ``apply(ctx: PatchContext) -> None`` (:class:`PatchModule`), or, for
a patch that stands in for a whole module, ``unusable(ctx)`` and ``provide(ctx)``
(:class:`StandInModule`), and changes things only through ``ctx`` so that every change can
be rolled back and reported.  The helpers here are the shapes patches kept writing for
themselves: reading an argument of a wrapped call (:func:`argument`), showing values while
one call runs (:func:`temporarily`), a class built in a patch that must look like its
module's own (:func:`module_level`) and the recurring transformers-5 fixes
(:func:`keep_as_class_attributes`, :func:`tie_nothing`), and the one wording of a stand-in's
error (:func:`unavailable`, for the ``explain`` of an :class:`OptionalSymbol`).
:data:`KERNEL_DISTS` names the
kernel's two distributions in the order to ask ``ctx.version`` about them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from .._errors import MissingSymbolError
from ..engine.journal import PatchContext, Retired
from ..engine.proxy import OptionalSymbol, unavailable
from .calls import Argument, argument, temporarily
from .classes import module_level
from .dists import KERNEL_DISTS
from .transformers5 import keep_as_class_attributes, tie_nothing

__all__ = ["KERNEL_DISTS", "Argument", "MissingSymbolError", "OptionalSymbol", "PatchContext",
           "PatchModule", "Retired", "StandInModule", "Wrapper", "argument",
           "keep_as_class_attributes", "module_level", "temporarily", "tie_nothing",
           "unavailable"]

Wrapper = Callable[[Callable[..., Any], Any, tuple[Any, ...], dict[str, Any]], Any]
"""What ``ctx.wrap`` takes: ``wrapper(wrapped, instance, args, kwargs)``, as in wrapt."""


class PatchModule(Protocol):
    """A ``patch.py`` that changes its target after (or before) the target's body runs."""

    def apply(self, ctx: PatchContext) -> None: ...


class StandInModule(Protocol):
    """A ``patch.py`` of a ``when = "instead"`` patch: it may replace its whole target.

    ``unusable(ctx)`` runs before the real module's body and says why that module cannot
    serve this process (``None``: it can); ``provide(ctx)`` then fills ``ctx.module`` in.
    """

    def unusable(self, ctx: PatchContext) -> str | None: ...

    def provide(self, ctx: PatchContext) -> None: ...
