"""Helpers for the two things a wrapper most often does with the call it wraps.

:func:`argument` reads (or replaces) one argument of the wrapped call by name, whether the
caller passed it by position or by keyword, and checks at apply time that the function has
that parameter at all -- so a target whose signature changed fails the patch when it is
applied (rolled back, reported), not at the first call.  :func:`temporarily` shows values
on an object or mapping while one call runs and puts back exactly what was there before,
present or absent, when it returns or raises.

Both are shapes that recur across patches; one helper each keeps them alike.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from typing import Any

__all__ = ["Argument", "argument", "temporarily"]

_ABSENT = object()


class Argument:
    """One named argument of a wrapped function; made by :func:`argument`.

    ``arg(instance, args, kwargs)`` is its value in a call (the parameter's default when the
    caller left it out), with the ``(instance, args, kwargs)`` a ``ctx.wrap`` wrapper gets;
    ``arg.replaced(instance, args, kwargs, value)`` gives the ``(args, kwargs)`` of the same
    call with that argument set to ``value``.  A call that does not fit the signature raises
    the TypeError the function itself would.
    """

    def __init__(self, signature: inspect.Signature, name: str, takes_instance: bool) -> None:
        self.name = name
        self._signature = signature
        self._takes_instance = takes_instance

    def _bind(self, instance: Any, args: tuple[Any, ...],
              kwargs: dict[str, Any]) -> tuple[inspect.BoundArguments, bool]:
        # wrapt hands a method's ``self`` over as ``instance``; a plain function read from a
        # class has it in its signature, so it goes back in front of the arguments.
        with_instance = self._takes_instance and instance is not None
        bound = self._signature.bind(*((instance,) if with_instance else ()), *args, **kwargs)
        return bound, with_instance

    def __call__(self, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        bound, _ = self._bind(instance, args, kwargs)
        if self.name in bound.arguments:
            return bound.arguments[self.name]
        return self._signature.parameters[self.name].default

    def replaced(self, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
                 value: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
        bound, with_instance = self._bind(instance, args, kwargs)
        bound.arguments[self.name] = value
        return (bound.args[1:] if with_instance else bound.args), bound.kwargs


def argument(func: Any, name: str) -> Argument:
    """Read argument ``name`` of calls to ``func`` inside a ``ctx.wrap`` wrapper.

    ``func`` is what is wrapped, as read from its module or class (``Model.__init__``, a
    class's raw ``staticmethod``/``classmethod`` or a bound classmethod).  Raises TypeError
    here, at apply time, when ``func`` has no parameter ``name``::

        config_of = argument(ctx.module.Gemma3TextModel.__init__, "config")

        def init(wrapped, instance, args, kwargs):
            config = config_of(instance, args, kwargs)
    """
    takes_instance = False
    if isinstance(func, staticmethod):
        signature = inspect.signature(func.__func__)
    elif isinstance(func, classmethod):  # the raw descriptor: drop ``cls``
        unbound = inspect.signature(func.__func__)
        signature = unbound.replace(parameters=list(unbound.parameters.values())[1:])
    else:
        signature = inspect.signature(func)
        takes_instance = inspect.isfunction(func)
    parameter = signature.parameters.get(name)
    if parameter is None or parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
        label = getattr(func, "__qualname__", None) or repr(func)
        raise TypeError(f"{label}{signature} has no parameter {name!r}; nothing safe to do")
    return Argument(signature, name, takes_instance)


@contextmanager
def temporarily(target: Any, values: Mapping[str, Any]) -> Iterator[None]:
    """Set ``values`` on ``target`` for the body of a ``with``; then put back what was there.

    ``target`` is a mutable mapping (items) or an object (its instance ``__dict__``, written
    directly so that a class's ``__setattr__`` -- a config's attribute map or validation --
    neither rewrites nor rejects the values shown).  Whether the body returns or raises,
    each name gets back its old value, or is removed if it had none: the journal's rule,
    for the length of one call.
    """
    namespace: MutableMapping[str, Any] = target if isinstance(target, MutableMapping) \
        else vars(target)
    saved = {name: namespace.get(name, _ABSENT) for name in values}
    namespace.update(values)
    try:
        yield
    finally:
        for name, old in saved.items():
            if old is _ABSENT:
                namespace.pop(name, None)
            else:
                namespace[name] = old
