"""The engine: wakes on the first watched import, then judges, applies and reports.

This file holds names only.  Python runs a package's ``__init__`` before any of its
modules, and the doctor imports :mod:`.gates` alone: code here would be paid for by every
such import.  So the public names below are looked up on first use, in the module that
holds each one:

* :mod:`.process` -- the process's engine (:func:`get`), the loader's listener, the
  public ``install()``, ``status()`` and ``revert()``, the report, fork and exit hooks;
* :mod:`.core` -- :class:`Engine`: dispatches loader events, judges and applies, enforces;
* :mod:`.standin` -- patches that stand in for a whole module (``when = "instead"``);
* :mod:`.observe` -- what ``status()`` says: ``stale`` and ``bypassed``;
* :mod:`.judge`, :mod:`.gates`, :mod:`.source` -- would a patch act here, and why not;
* :mod:`.journal`, :mod:`.proxy` -- what a patch changes, and how it is undone;
* :mod:`.record`, :mod:`.log` -- the per-patch records and their states, the logger.

Importing any of them has no side effect: nothing is registered, installed or read until
:func:`get` builds the process's engine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .core import Engine
    from .process import get, install, revert, status

__all__ = ["Engine", "get", "install", "revert", "status"]

_HOME = {"Engine": "core", "get": "process", "install": "process", "revert": "process",
         "status": "process"}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(f"{__name__}.{home}"), name)
