"""Classes that a patch puts back where a newer dependency removed them."""

from __future__ import annotations

from typing import TypeVar

__all__ = ["module_level"]

_Class = TypeVar("_Class", bound=type)


def module_level(cls: _Class, module_name: str) -> _Class:
    """Give ``cls`` (written in a patch's builder function) the ``__module__`` and
    ``__qualname__`` of a class defined at the top of ``module_name``.

    A patch builds such a class inside a function so that heavy imports (torch) happen
    only when it is applied; without this the class would say
    ``_build.<locals>.Name`` in reprs and error messages, and pickle could not find it.
    """
    cls.__module__ = module_name
    cls.__qualname__ = cls.__name__
    return cls
