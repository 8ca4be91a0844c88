"""The process's own engine: built on the first loader event, reported until exit.

:data:`sglang_shims._bootstrap.LISTENER` names :func:`on_loader_event`; the public
``install()``, ``status()`` and ``revert()`` land here too.  Besides building the
:class:`~sglang_shims.engine.core.Engine`, this module gives it what only a process has:
our log handler, the warnings on stderr, the ``<pid>.json`` report (rewritten whenever the
records change, when the process names itself, in a fork child and at exit) and the
wake-up time.  Importing it does none of that; :func:`get` does, once.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
import time
from types import ModuleType
from typing import Any

from .. import _bootstrap, _toggles
from ..catalog import load
from . import log, record
from .core import Engine

_lock = threading.Lock()
_engine: Engine | None = None
_report_failed = False  # said once: a report folder that cannot be written stays so


def get(boot: _bootstrap.Boot | None = None) -> Engine:
    """The process's engine, built on first use from the bootstrap's state.

    Besides building it, this is where a process gets what only the process's own engine
    should have: our log handler, the warnings on stderr, the report (at every change, at
    exit, in fork children), and the wake-up time (``timing["wake_ms"]``, from the first
    watched import to here).
    """
    global _engine
    if _engine is None:
        with _lock:
            if _engine is None:
                boot = boot or _bootstrap.BOOT
                logger, level_problem = log.configure()
                toggles = boot.toggles if isinstance(boot.toggles, _toggles.Toggles) \
                    else _toggles.Toggles()
                engine = Engine(boot, load.load(_bootstrap.env("SGLANG_SHIMS_PATH")),
                                toggles, log=logger)
                engine.on_change = write_report
                engine.on_import["setproctitle"] = _wrap_title
                engine.announce([level_problem] if level_problem else [])
                atexit.register(_at_exit, engine)
                if hasattr(os, "register_at_fork"):  # POSIX
                    os.register_at_fork(after_in_child=_after_fork_in_child)
                if record.report_dir():  # resolved now, before the program can change directory
                    _follow_process_title(engine)
                if boot.woke is not None:
                    engine.timing["wake_ms"] = (time.perf_counter() - boot.woke) * 1000
                    engine.timing["wake_cpu_ms"] = (time.thread_time() - boot.woke_cpu) * 1000
                _engine = engine
    return _engine


def current() -> Engine | None:
    """The process's engine if it was built, without building it."""
    return _engine


def on_loader_event(boot: _bootstrap.Boot, name: str, phase: str, module: Any,
                    exc: BaseException | None) -> str | None:
    """:data:`sglang_shims._bootstrap.LISTENER`: one event of a watched module's loader."""
    return get(boot).on_event(name, phase, module, exc)


def install(origin: str = "install") -> dict[str, dict[str, Any]]:
    _bootstrap.activate(origin)
    engine = get()
    if engine.toggles.all_off:
        return engine.status()
    engine.reset_reverted()
    engine.watch_pending()
    engine.patch_imported()
    return engine.status()


def revert() -> list[str]:
    return get().revert() if _engine is not None else []


def status() -> dict[str, dict[str, Any]]:
    return get().status()


# -- the report ------------------------------------------------------------------------

def write_report(engine: Engine) -> None:
    """Write ``engine``'s records to ``$SGLANG_SHIMS_REPORT_DIR/<pid>.json``, if set; a
    failure is logged once and never raised."""
    global _report_failed
    directory = record.report_dir()
    if not directory:
        return
    try:
        data = record.payload(engine.observed(), engine.origin, engine.warnings, engine.timing)
        for patch_id, entry in engine.status().items():
            data["patches"][patch_id]["proxies"] = entry["proxies"]
            if "untested" in entry:
                data["patches"][patch_id]["untested"] = entry["untested"]
        record.write(directory, data)
    except Exception as exc:
        if not _report_failed:
            _report_failed = True
            engine.log.warning("cannot write the report to %s: %s", directory, exc)


def _at_exit(engine: Engine) -> None:
    engine.summarise()
    write_report(engine)


def _follow_process_title(engine: Engine) -> None:
    """Rewrite the report when the process names itself (``sglang::scheduler_TP0``).

    sglang sets its process titles with ``setproctitle`` after our patches ran, and
    the title is the only reliable role of a spawned child; so, only when reports are
    written, ``setproctitle.setproctitle`` is wrapped to write the report again.
    """
    module = sys.modules.get("setproctitle")
    if module is not None:
        _wrap_title(engine, module)
    else:
        _bootstrap.watch({"setproctitle"})


def _wrap_title(engine: Engine, module: ModuleType) -> None:
    original = getattr(module, "setproctitle", None)
    if original is None or getattr(original, "_sglang_shims_report", False):
        return

    def setproctitle(title: str, *args: Any, **kwargs: Any) -> Any:
        result = original(title, *args, **kwargs)
        write_report(engine)
        return result

    setproctitle._sglang_shims_report = True  # type: ignore[attr-defined]
    module.setproctitle = setproctitle  # type: ignore[attr-defined]


# -- fork children ---------------------------------------------------------------------

def _after_fork_in_child() -> None:
    if _engine is not None:
        try:
            _forked(_engine)
        except Exception:  # never break the user's fork
            pass


def _forked(engine: Engine) -> None:
    """Run in a fork child right after ``os.fork()``: report it, honestly labelled.

    A fork child inherits the parent's patched modules and this engine, but not the
    chance to report: multiprocessing's fork children leave through ``os._exit``,
    which skips ``atexit``.  So the child writes its report now, marked as the state
    inherited from its parent; in a multiprocessing child it writes again, as its
    own, when the child's work is done (multiprocessing's exit finalizers do run).
    """
    engine.lock = threading.RLock()  # a parent thread may have held it during fork
    parent = os.getppid()
    record.note_fork(parent, inherited=True)
    write_report(engine)
    record.note_fork(parent, inherited=False)
    mp_util = sys.modules.get("multiprocessing.util")
    if mp_util is not None:
        # runs once multiprocessing has set up the child (its name, its finalizers)
        mp_util.register_after_fork(engine, _report_at_child_exit)


def _report_at_child_exit(engine: Engine) -> None:
    import multiprocessing.util as mp_util

    mp_util.Finalize(None, _at_exit, args=(engine,), exitpriority=-100)
