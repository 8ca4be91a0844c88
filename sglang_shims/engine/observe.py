"""What ``status()`` says: a record checked against the modules as they are now.

A record says what the engine did; the process may have undone it since, or never let us
see the import.  ``applied`` becomes ``stale`` when the target was re-executed
(``importlib.reload`` gives the module a new ``__spec__``) or replaced in ``sys.modules``;
``pending`` becomes ``bypassed`` when the target is imported although our loader never ran
for it.  The record itself is left as the engine made it: a copy says what is seen.
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import TYPE_CHECKING

from .record import Record, State

if TYPE_CHECKING:
    from .._bootstrap import Watcher


def seen(record: Record, current: ModuleType | None,
         patched: tuple[ModuleType, object] | None, loading: bool,
         watcher: Watcher | None) -> Record:
    """``record`` as the process shows it now.

    ``current`` is ``sys.modules[record.target]`` (None: not imported); ``patched`` the
    module the patch changed and that module's ``__spec__`` then (None: it changed none);
    ``loading``: our loader is running the target's body; ``watcher``: our finder.
    """
    if current is not None and record.state is State.APPLIED:
        why = stale(record.target, current, patched)
        return record.replace(state=State.STALE, reason=why) if why else record
    if current is not None and record.state is State.PENDING:
        if loading:
            return record.replace(reason=f"{record.target} is being imported")
        return record.replace(state=State.BYPASSED,
                              reason=bypassed(record.target, current, watcher))
    return record


def stale(target: str, current: ModuleType,
          patched: tuple[ModuleType, object] | None) -> str:
    """Why what the patch changed in ``target`` is gone, or "" while it is there."""
    if patched is None:
        return ""
    module, spec = patched
    if current is not module:
        return (f"{target} was imported again after this patch was applied (a new module"
                " object replaced the patched one in sys.modules); the new module is stock")
    if getattr(current, "__spec__", None) is not spec:
        return (f"{target} was executed again after this patch was applied"
                " (importlib.reload()); what the patch changed in it is gone")
    return ""


def bypassed(target: str, module: ModuleType, watcher: Watcher | None) -> str:
    """Why ``target`` is imported but its patch never ran: who loaded it, and where
    our finder stood."""
    loader = getattr(getattr(module, "__spec__", None), "loader", None) \
        or getattr(module, "__loader__", None)
    who = "an unknown loader" if loader is None else \
        f"{type(loader).__module__}.{type(loader).__qualname__}"
    finders = list(sys.meta_path)
    if watcher is None or watcher not in finders:
        where = "the shims' finder is not on sys.meta_path"
    else:
        ahead = [f"{type(f).__module__}.{type(f).__qualname__}"
                 for f in finders[:finders.index(watcher)]]
        where = ("finders ahead of the shims' on sys.meta_path: " + ", ".join(ahead)
                 if ahead else "it was imported before the shims' finder saw it"
                 " (before start-up activation, or by a loader that skips sys.meta_path)")
    return (f"{target} was imported without the shims' hook (loaded by {who}; {where});"
            " this patch did not act. sglang_shims.install() applies it late")
