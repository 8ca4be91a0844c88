"""Fixes that recur wherever code written for transformers 4 meets transformers 5.

:func:`keep_as_class_attributes` -- annotated class attributes and transformers 5's
dataclass configs:

Since transformers 5.4 (PR 41250) ``PreTrainedConfig.__init_subclass__`` runs
``dataclass()`` on every config subclass, so each annotated class attribute becomes a
field.  Config classes written for transformers 4 use annotations freely: some have a
value ``dataclass()`` rejects (a dict, a config instance: unhashable), and some have none
at all (``vision_config: VisionConfig``), which 5.4.0 and 5.5.0 -- before the fields
became keyword-only in 5.5.1 -- reject after any field with a default.  Under
transformers 4 both were just annotations (the second) or plain class attributes (the
first).  Re-declaring such an annotation ``ClassVar`` before ``dataclass()`` reads the
class restores exactly that: ``dataclass`` skips ``ClassVar`` pseudo-fields and leaves
the value, if any, where it was.  Config serialisation reads ``__dict__``, not the
fields, so nothing else changes.

Patch code uses :func:`keep_as_class_attributes` from ``sglang_shims.patching``.

:func:`tie_nothing` -- ``_tied_weights_keys``: transformers 4 read it as a list of
parameter names; transformers 5's ``post_init`` reads ``{target: source}`` and calls
``.keys()`` on it, so a model class still declaring the v4 list fails to construct.
"""

from __future__ import annotations

import dataclasses
import typing
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..engine.journal import PatchContext

__all__ = ["keep_as_class_attributes", "tie_nothing"]


def _is_classvar(hint: Any) -> bool:
    if hint is typing.ClassVar or typing.get_origin(hint) is typing.ClassVar:
        return True
    return isinstance(hint, str) and hint.replace("typing.", "").startswith("ClassVar")


def _as_classvar(hint: Any) -> Any:
    if isinstance(hint, str):
        return typing.ClassVar
    try:
        return typing.ClassVar[hint]
    except TypeError:
        return typing.ClassVar


def _unhashable(cls: type, name: str) -> bool:
    value = cls.__dict__[name]
    return not isinstance(value, dataclasses.Field) and type(value).__hash__ is None


def keep_as_class_attributes(cls: type, *, unhashable: bool = True,
                             bare: bool = False) -> list[str]:
    """Re-declare as ``ClassVar`` the annotations of ``cls`` a transformers-5 dataclass
    would reject: those whose class-level value is unhashable (``unhashable``) and, with
    ``bare``, those with no class-level value.  Changes the class's own
    ``__annotations__`` in place; returns the names changed."""
    annotations = cls.__dict__.get("__annotations__")  # noqa: RUF063 (the class's own)
    if not isinstance(annotations, dict):
        return []
    changed = []
    for name, hint in list(annotations.items()):
        if _is_classvar(hint):
            continue
        has_value = name in cls.__dict__
        if (has_value and unhashable and _unhashable(cls, name)) or (not has_value and bare):
            annotations[name] = _as_classvar(hint)
            changed.append(name)
    return changed


def tie_nothing(ctx: PatchContext, cls: type | None) -> bool:
    """Make a v4 list ``cls._tied_weights_keys`` the empty mapping transformers 5 reads.

    Only for models that have nothing to tie: sglang's causal-LM classes declare
    ``["lm_head.weight"]`` for a module with no ``lm_head`` (logits come from the embedding),
    so the faithful transformers-5 value is ``{}``.  ``cls`` None (the release lacks the
    class) or a class already declaring a mapping is left alone; returns whether it changed.
    """
    if cls is None or not isinstance(vars(cls).get("_tied_weights_keys"), list):
        return False
    ctx.setattr(cls, "_tied_weights_keys", {})
    return True
