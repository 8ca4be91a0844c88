"""Standing in for a whole module: the protocol of ``when = "instead"`` patches.

A stand-in patch replaces its target's body when the real module cannot serve (sgl_kernel
whose compiled library does not load, or that is not installed at all).  The loader asks
twice: ``before`` the body runs (the patch's ``unusable(ctx)`` says why the real module
cannot serve, or nothing) and, if the body raised, on ``error`` (the exception is the
reason).  Answering ``"instead"`` makes the loader send an ``instead`` event, where the
patch's ``provide(ctx)`` fills the module; a real module that imported and serves leaves
its stand-ins ``not-applicable``.
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import TYPE_CHECKING

from .. import _toggles
from ..catalog import load
from .judge import WOULD_APPLY
from .record import State

if TYPE_CHECKING:
    from ..catalog.manifest import Manifest
    from .core import Engine


def _claim(engine: Engine, name: str) -> Manifest | None:
    """The first enabled, applicable stand-in patch for ``name``, or None."""
    for manifest in engine.triggered_by(name, "instead"):
        on, by = engine.enabled[manifest.id]
        record = engine.records[manifest.id]
        if not on or record.state is not State.PENDING:
            continue
        judged = engine.judge(manifest, on, by)
        if judged.state != WOULD_APPLY:
            engine.set_state(manifest, judged.state, judged.reason, gates=judged.gates)
            continue
        return manifest
    return None


def before(engine: Engine, name: str, module: ModuleType) -> str | None:
    """Before ``name``'s body runs: ``"instead"`` when a stand-in patch says (or a toggle
    forces) that the real module cannot serve."""
    manifest = _claim(engine, name)
    if manifest is None:
        return None
    by = engine.enabled[manifest.id][1]
    ctx = engine.context(manifest, module)
    forced = by.startswith(("SGLANG_SHIMS_ENABLE", _toggles.patch_var(manifest.id)))
    try:
        reason = f"forced by {by}" if forced else load.load_code(manifest).unusable(ctx)
    except Exception as exc:
        engine.set_state(manifest, State.FAILED,
                         f"unusable() raised {type(exc).__name__}: {exc}")
        engine.enforce(manifest)
        return None
    except BaseException as exc:  # Ctrl-C, SystemExit: said, then passed on
        from .journal import interrupted

        engine.set_state(manifest, State.FAILED,
                         interrupted(exc, manifest, f"deciding whether {name} can serve",
                                     rolled_back=False))
        raise
    if not reason:
        return None
    engine.standing_in[name] = (manifest, str(reason))
    return "instead"


def after_error(engine: Engine, name: str, module: ModuleType,
                exc: BaseException) -> str | None:
    """``name``'s body raised: stand in for it (``"instead"``) if a stand-in patch may.
    Never for Ctrl-C or ``sys.exit``: the program was asked to stop, not the module to be
    replaced."""
    if not isinstance(exc, Exception):
        return None
    manifest = _claim(engine, name)
    if manifest is None:
        return None
    first_line = (str(exc).strip().splitlines() or [""])[0]
    engine.standing_in[name] = (manifest, f"importing {name} failed:"
                                          f" {type(exc).__name__}: {first_line}")
    # The failed body may have bound names and imported submodules: start clean.
    for key in [k for k in vars(module) if not k.startswith("__")]:
        delattr(module, key)
    for key in [k for k in sys.modules if k.startswith(name + ".")]:
        del sys.modules[key]
    provide(engine, name, module)
    return "instead"


def provide(engine: Engine, name: str, module: ModuleType) -> None:
    """Fill ``module`` with the stand-in patch's ``provide(ctx)``; a failure stops the
    import, since no real module is there to fall back on."""
    from . import journal

    manifest, reason = engine.standing_in[name]
    ctx = engine.context(manifest, module, cause=reason)
    try:
        load.load_code(manifest).provide(ctx)
    except BaseException as exc:
        if not isinstance(exc, Exception):  # Ctrl-C, SystemExit: said, then passed on
            engine.set_state(manifest, State.FAILED,
                             journal.interrupted(exc, manifest, f"standing in for {name}",
                                                 rolled_back=False))
            raise
        engine.log.debug("%s failed:", manifest.id, exc_info=True)
        engine.set_state(manifest, State.FAILED, f"provide() raised {type(exc).__name__}: {exc}")
        from .._errors import ShimImportError

        raise ShimImportError(
            f"sglang-shims: patch {manifest.id!r} could not stand in for {name}"
            f" ({reason}): {type(exc).__name__}: {exc}") from exc
    with engine.lock:
        engine.keep(manifest, ctx)
    engine.set_state(manifest, State.APPLIED, f"standing in for {name}: {reason}",
                     changes=journal.changes(ctx), notes=ctx.notes, details=ctx.details)
    engine.changed()


def real_module_served(engine: Engine, name: str) -> None:
    """``name`` imported for real: its stand-ins that did not act are not needed here."""
    if name in engine.standing_in:
        return
    for manifest in engine.triggered_by(name, "instead"):
        if engine.records[manifest.id].state is State.PENDING:
            engine.set_state(manifest, State.NOT_APPLICABLE,
                             f"the installed {name} imported and can serve here")
