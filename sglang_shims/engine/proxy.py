"""Lazy stand-ins for names that a provider module no longer exports.

``from sgl_kernel import fused_marlin_moe`` must keep working for code that never
calls it.  An :class:`OptionalSymbol` is put on the provider module under the
missing name.  It is callable and carries the right ``__name__``, ``__qualname__``
and ``__module__``.  On its first call it resolves: to a declared substitute if
one imports, otherwise to an error that says what is missing and what to install.

Once resolved to a substitute it steps out of the way: every module-level binding
of the proxy in ``sys.modules`` is rebound to the substitute, so calls through those
names cost nothing extra.  References captured elsewhere still reach the proxy; for
them each proxy has a class of its own whose ``__call__`` becomes the substitute
itself (a static method), so the call is forwarded by the interpreter, not by a
Python-level ``*args`` wrapper.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Callable
from typing import Any

from .._errors import MissingSymbolError

log = logging.getLogger("sglang_shims")


def unavailable(qualname: str, cause: str, remedy: str, patch_id: str) -> str:
    """The one wording of "this name cannot be used here", for every stand-in's error: what
    is missing, why, what to do, and which patch put the stand-in there -- with the command
    that explains that patch, since the user did not ask for it and may not know it exists.

    ``cause`` is a clause (its final full stop is dropped); ``remedy`` one or more sentences.
    """
    return (f"{qualname} is not available: {cause.rstrip().rstrip('.')}. {remedy.strip()}"
            f" [sglang-shims patch {patch_id!r} stands in for it so that importing works;"
            f" see `sglang-shims explain {patch_id}`]")


class OptionalSymbol:
    """A callable placeholder for ``module.name``; see the module docstring."""

    _sglang_shims_proxy = True
    """The mark :data:`sglang_shims.engine.judge.PROXY_MARK` looks for: a name bound to a
    proxy is not one its module exports."""

    def __init__(self, module: str, name: str, patch_id: str,
                 explain: Callable[[], str], substitute: str | None = None) -> None:
        # A class per proxy, so that resolving can install the target as its __call__.
        self.__class__ = type("OptionalSymbol", (OptionalSymbol,), {})
        self.__name__ = name
        self.__qualname__ = name
        self.__module__ = module
        self.__doc__ = (f"Placeholder for {module}.{name}, which the installed kernel does not"
                        f" export (sglang-shims patch {patch_id!r}).")
        self.patch_id = patch_id
        self.substitute = substitute
        self.failed_calls = 0
        self.rebound = 0
        self._explain = explain
        self._target: Callable[..., Any] | None = None
        self._error: str | None = None
        self._lock = threading.Lock()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        target = self._target
        if target is None:
            target = self._resolve()
        return target(*args, **kwargs)

    def __repr__(self) -> str:
        state = "resolved" if self._target else "unavailable" if self._error else "unresolved"
        return f"<sglang-shims optional symbol {self.__module__}.{self.__name__} ({state})>"

    @property
    def __wrapped__(self) -> Callable[..., Any] | None:
        return self._target

    @property
    def state(self) -> str:
        if self._target is not None:
            return "resolved"
        return "unavailable" if self._error else "unresolved"

    def report(self) -> dict[str, Any]:
        return {"state": self.state, "substitute": self.substitute,
                "failed_calls": self.failed_calls, "rebound": self.rebound}

    def _resolve(self) -> Callable[..., Any]:
        with self._lock:
            if self._target is not None:
                return self._target
            cause = ""
            if self.substitute and self._error is None:
                try:
                    target = _load(self.substitute)
                except Exception as exc:
                    cause = f" (substitute {self.substitute} failed: {type(exc).__name__}: {exc})"
                else:
                    self._target = target
                    type(self).__call__ = staticmethod(target)  # type: ignore[method-assign]
                    self.rebound = _rebind(self, target)
                    log.info("%s.%s resolved to %s; %d module binding(s) rebound",
                             self.__module__, self.__name__, self.substitute, self.rebound)
                    return target
            self.failed_calls += 1
            first = self._error is None
            if first:
                self._error = self._explain() + cause
                log.warning("%s", self._error)
            message = self._error
        raise MissingSymbolError(message)


def _load(spec: str) -> Callable[..., Any]:
    import importlib

    module_name, _, attr = spec.partition(":")
    value = getattr(importlib.import_module(module_name), attr)
    if not callable(value):
        raise TypeError(f"{spec} is not callable")
    return value  # type: ignore[no-any-return]


def _rebind(proxy: OptionalSymbol, target: Callable[..., Any]) -> int:
    count = 0
    for module in list(sys.modules.values()):
        namespace = getattr(module, "__dict__", None)
        if not isinstance(namespace, dict):
            continue
        for key, value in list(namespace.items()):
            if value is proxy:
                namespace[key] = target
                count += 1
    return count
