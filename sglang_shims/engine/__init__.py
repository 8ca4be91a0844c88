"""The engine: wakes on the first watched import, then judges, applies and reports.

The bootstrap's loader hands every event of a watched module here (``before`` its
body, ``after`` it, or ``error`` if it raised).  For each patch triggered by that
event the engine takes the patch (exactly once per process, whatever the threads),
judges it (:mod:`_assess`), applies it through a journal (:mod:`_apply`), rolls it
back on failure, records the outcome (:mod:`_report`) and, in strict mode or for a
``required`` patch, turns a failure into the ImportError of the target.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
from types import ModuleType
from typing import TYPE_CHECKING, Any

from .. import _bootstrap, _toggles
from .._errors import ShimImportError
from ..catalog import load as _catalog
from ..catalog.manifest import Manifest, Provide
from . import log as _log
from . import record as _report
from .gates import Environment
from .judge import Assessment, assess
from .record import State

if TYPE_CHECKING:
    # Loaded where a patch is applied (journal) or a name provided (proxy), not to judge:
    # a process where no patch acts never imports them.
    from .journal import PatchContext
    from .proxy import OptionalSymbol


class Engine:
    """Judges, applies and records the patches of one process.

    It receives everything it works from -- the bootstrap's :class:`~sglang_shims._bootstrap.Boot`,
    the catalog, the toggles, the environment -- and touches nothing global while being
    built, so tests build one in-process; :func:`get` builds the process's own and adds
    what belongs to a process (the log handler, the ``atexit`` report).
    """

    def __init__(self, boot: _bootstrap.Boot, catalog: _catalog.Catalog,
                 toggles: _toggles.Toggles, env: Environment | None = None,
                 log: logging.Logger | None = None) -> None:
        self.boot = boot
        self.origin = boot.origin or "install"
        self.toggles = toggles
        self.log = log or logging.getLogger("sglang_shims")
        self.lock = threading.RLock()
        self.env = env or Environment()
        self.catalog = catalog
        self.manifests = self.catalog.by_id()
        self.records: dict[str, _report.Record] = {}
        self.enabled: dict[str, tuple[bool, str]] = {}
        self.contexts: dict[str, PatchContext] = {}
        self.proxies: dict[str, OptionalSymbol] = {}
        self.claims: dict[tuple[int, str], str] = {}
        self.standing_in: dict[str, tuple[Manifest, str]] = {}
        self.order: list[str] = []
        self.running: set[str] = set()
        self.loading: set[str] = set()  # watched modules whose body our loader is running
        self.specs: dict[str, object] = {}  # patch id -> its target's __spec__ when applied
        self.summarised = False
        self.report_problem = False
        self.invalid_reported = False
        self.timing: dict[str, float] = {"judge_ms": 0.0, "judge_cpu_ms": 0.0}
        for manifest in self.manifests.values():
            on, by = self.toggles.decide(manifest.id, manifest.default)
            self.enabled[manifest.id] = (on, by)
            self.records[manifest.id] = self._fresh(manifest, on, by)
        for folder, error in self.catalog.errors.items():
            # a refused extra folder may carry a built-in's name: never hide the built-in
            key = folder if folder not in self.records else f"{folder} (extra folder)"
            self.records[key] = _report.Record(key, State.FAILED, error)
        self.warnings = list(self.toggles.problems)
        self.warnings += self.toggles.unknown(list(self.manifests) + list(self.catalog.errors))
        self.warnings += self.catalog.warnings
        self.warnings += self._stale_table()

    def announce(self, extra: list[str]) -> None:
        """Log the warnings gathered while building (once, when the process's engine wakes)."""
        self.warnings += extra
        for warning in self.warnings:
            self.log.warning("%s", warning)
        for folder, error in self.catalog.errors.items():
            self.log.warning("patch %s not loaded: %s", folder, error)

    def judge(self, manifest: Manifest, enabled: bool, by: str,
              live: ModuleType | None = None) -> Assessment:
        """:func:`assess` one patch, timed into the record and ``timing["judge_ms"]`` (CPU
        time of this thread: ``judge_cpu_ms``)."""
        start, start_cpu = time.perf_counter(), time.thread_time()
        try:
            return assess(manifest, self.env, enabled, by, live)
        finally:
            spent = (time.perf_counter() - start) * 1000
            self.records[manifest.id].judge_ms += spent
            self.timing["judge_ms"] += spent
            self.timing["judge_cpu_ms"] += (time.thread_time() - start_cpu) * 1000

    # -- state ---------------------------------------------------------------------------

    @staticmethod
    def _fresh(manifest: Manifest, on: bool, by: str) -> _report.Record:
        state, reason = ("pending", f"waiting for {manifest.target} to be imported") if on \
            else ("disabled", f"disabled by {by}")
        return _report.Record(
            manifest.id, state, reason, summary=manifest.summary, target=manifest.target,
            when=manifest.when, policy=manifest.policy, source=manifest.source)

    def _stale_table(self) -> list[str]:
        """The start-up table and the catalog are generated together; differing, one of
        them was not regenerated (a checkout) or the install is damaged."""
        builtin = [m for m in self.manifests.values() if m.source == "builtin"]
        if ({m.id: m.target for m in builtin} != _bootstrap.TARGETS
                or {m.id for m in builtin if not m.default} != _bootstrap.OFF_BY_DEFAULT
                or {m.id for m in builtin if m.policy == "required"} != _bootstrap.REQUIRED
                or {m.id for m in builtin if m.when == "instead"} != _bootstrap.STAND_INS):
            return ["the start-up watch table does not match the built-in patches, so some may"
                    f" not be applied when their module is imported; to fix it,"
                    f" {_bootstrap.remedy()}"]
        return []

    def status(self) -> dict[str, dict[str, Any]]:
        with self.lock:
            out = {}
            for patch_id, record in self.observed().items():
                entry = record.as_dict()
                entry["proxies"] = {name: proxy.report() for name, proxy in self.proxies.items()
                                    if proxy.patch_id == patch_id}
                out[patch_id] = entry
            return out

    def observed(self) -> dict[str, _report.Record]:
        """The records, checked against the modules as they are now.

        A record says what the engine did; the process may have undone it since, or
        never let us see the import.  ``applied`` becomes ``stale`` when the target was
        re-executed (``importlib.reload`` gives the module a new ``__spec__``) or
        replaced in ``sys.modules``; ``pending`` becomes ``bypassed`` when the target is
        imported although our loader never ran for it.
        """
        import sys

        with self.lock:
            return {patch_id: self._observe(patch_id, record, sys.modules.get(record.target))
                    for patch_id, record in self.records.items()}

    def _observe(self, patch_id: str, record: _report.Record,
                 current: ModuleType | None) -> _report.Record:
        if current is not None and record.state == "applied":
            why = self._stale(patch_id, record.target, current)
            return record.but(state=State.STALE, reason=why) if why else record
        if current is not None and record.state == "pending":
            if record.target in self.loading:
                return record.but(reason=f"{record.target} is being imported")
            return record.but(state=State.BYPASSED,
                              reason=self._bypassed(record.target, current))
        return record

    def _stale(self, patch_id: str, target: str, current: ModuleType) -> str:
        ctx = self.contexts.get(patch_id)
        if ctx is None:
            return ""
        if current is not ctx.module:
            return (f"{target} was imported again after this patch was applied (a new module"
                    " object replaced the patched one in sys.modules); the new module is stock")
        if getattr(current, "__spec__", None) is not self.specs.get(patch_id):
            return (f"{target} was executed again after this patch was applied"
                    " (importlib.reload()); what the patch changed in it is gone")
        return ""

    def _bypassed(self, target: str, module: ModuleType) -> str:
        """Why ``target`` is imported but its patch never ran: who loaded it, and where
        our finder stood."""
        import sys

        loader = getattr(getattr(module, "__spec__", None), "loader", None) \
            or getattr(module, "__loader__", None)
        who = "an unknown loader" if loader is None else \
            f"{type(loader).__module__}.{type(loader).__qualname__}"
        watcher = self.watcher()
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

    def watcher(self) -> _bootstrap.Watcher | None:
        return self.boot.watcher

    # -- events --------------------------------------------------------------------------

    def triggered_by(self, module: str, phase: str) -> list[Manifest]:
        return sorted((m for m in self.manifests.values()
                       if m.target == module and m.when == phase), key=lambda m: m.id)

    def on_event(self, name: str, phase: str, module: ModuleType,
                 exc: BaseException | None) -> str | None:
        """Handle one loader event; answer "instead" when a patch stands in for ``name``."""
        if self.toggles.strict and self.catalog.errors and not self.invalid_reported:
            self.invalid_reported = True
            problems = "; ".join(self.catalog.errors.values())
            raise ShimImportError(f"sglang-shims: strict mode and a patch could not be loaded:"
                                  f" {problems}")
        if name == "setproctitle" and phase == "after":
            self._wrap_title(module)
        if phase == "before":
            self.loading.add(name)
        elif phase == "error":
            self.loading.discard(name)
        answer = None
        if phase == "before":
            answer = self._stand_in_before(name, module)
        elif phase == "instead":
            self._stand_in(name, module)
            return None
        elif phase == "error":
            assert exc is not None
            answer = self._stand_in_after_error(name, module, exc)
            if answer is None:
                for manifest in self.triggered_by(name, "after"):
                    record = self.records[manifest.id]
                    if record.state == "pending":
                        record.notes.append(
                            f"importing {name} raised {type(exc).__name__}: {exc}")
                self.write_report()
            return answer
        if phase == "after":
            self._real_module_served(name)
        for manifest in self.triggered_by(name, phase):
            self.run(manifest, module)
        if phase == "after":
            self.loading.discard(name)
        watcher = self.boot.watcher
        if phase == "after" and watcher is not None and not watcher.names:
            self.summarise()
        return answer

    # -- standing in for a whole module (when = "instead") -------------------------------

    def _claim_instead(self, name: str) -> Manifest | None:
        """The first enabled, applicable stand-in patch for ``name``, or None."""
        for manifest in self.triggered_by(name, "instead"):
            on, by = self.enabled[manifest.id]
            record = self.records[manifest.id]
            if not on or record.state != "pending":
                continue
            judged = self.judge(manifest, on, by)
            if judged.state != "would-apply":
                self._set(manifest, judged.state, judged.reason, gates=judged.gates)
                continue
            return manifest
        return None

    def _stand_in_before(self, name: str, module: ModuleType) -> str | None:
        manifest = self._claim_instead(name)
        if manifest is None:
            return None
        by = self.enabled[manifest.id][1]
        from .journal import PatchContext

        ctx = PatchContext(manifest, module, self.env.versions, self.claims, gpus=self.env.gpu)
        forced = by.startswith(("SGLANG_SHIMS_ENABLE", _toggles.patch_var(manifest.id)))
        try:
            reason = f"forced by {by}" if forced else _catalog.load_code(manifest).unusable(ctx)
        except Exception as exc:
            self._set(manifest, "failed", f"unusable() raised {type(exc).__name__}: {exc}")
            self._enforce(manifest)
            return None
        if not reason:
            return None
        self.standing_in[name] = (manifest, str(reason))
        return "instead"

    def _stand_in_after_error(self, name: str, module: ModuleType,
                              exc: BaseException) -> str | None:
        manifest = self._claim_instead(name)
        if manifest is None:
            return None
        first_line = (str(exc).strip().splitlines() or [""])[0]
        self.standing_in[name] = (manifest, f"importing {name} failed:"
                                            f" {type(exc).__name__}: {first_line}")
        # The failed body may have bound names and imported submodules: start clean.
        import sys

        for key in [k for k in vars(module) if not k.startswith("__")]:
            delattr(module, key)
        for key in [k for k in sys.modules if k.startswith(name + ".")]:
            del sys.modules[key]
        self._stand_in(name, module)
        return "instead"

    def _stand_in(self, name: str, module: ModuleType) -> None:
        manifest, reason = self.standing_in[name]
        from .journal import PatchContext

        ctx = PatchContext(manifest, module, self.env.versions, self.claims, gpus=self.env.gpu)
        ctx.cause = reason
        try:
            _catalog.load_code(manifest).provide(ctx)
        except Exception as exc:
            self.log.debug("%s failed:", manifest.id, exc_info=True)
            self._set(manifest, "failed", f"provide() raised {type(exc).__name__}: {exc}")
            raise ShimImportError(
                f"sglang-shims: patch {manifest.id!r} could not stand in for {name}"
                f" ({reason}): {type(exc).__name__}: {exc}") from exc
        with self.lock:
            self.contexts[manifest.id] = ctx
            self.specs[manifest.id] = getattr(module, "__spec__", None)
            self.order.append(manifest.id)
        self._set(manifest, "applied", f"standing in for {name}: {reason}",
                  changes=ctx.changes, notes=ctx.notes, details=ctx.details)
        self.write_report()

    def _real_module_served(self, name: str) -> None:
        if name in self.standing_in:
            return
        for manifest in self.triggered_by(name, "instead"):
            if self.records[manifest.id].state == "pending":
                self._set(manifest, "not-applicable",
                          f"the installed {name} imported and can serve here")

    def run(self, manifest: Manifest, module: ModuleType, late: bool = False) -> None:
        """Decide and apply one patch; only the first caller per process gets to."""
        with self.lock:
            record = self.records[manifest.id]
            if manifest.id in self.running or record.state not in ("pending", "disabled"):
                return
            if record.state == "disabled" and not self._strict_required(manifest):
                return
            self.running.add(manifest.id)
        try:
            self._decide_and_apply(manifest, module, late)
        finally:
            with self.lock:
                self.running.discard(manifest.id)
        self.write_report()
        self._enforce(manifest)

    def _strict_required(self, manifest: Manifest) -> bool:
        return self.toggles.strict and manifest.policy == "required"

    def _set(self, manifest: Manifest, state: str, reason: str, **extra: Any) -> None:
        record = self.records[manifest.id]
        record.state, record.reason, record.at = state, reason, time.time()
        for key, value in extra.items():
            setattr(record, key, value)
        level = {"applied": "info", "failed": "warning", "drifted": "warning"}.get(state, "debug")
        getattr(self.log, level)("%s: %s (%s)", manifest.id, state, reason)

    def _decide_and_apply(self, manifest: Manifest, module: ModuleType, late: bool) -> None:
        on, by = self.enabled[manifest.id]
        live = module if manifest.when == "after" else None
        judged = self.judge(manifest, on, by, live)
        if judged.state != "would-apply":
            self._set(manifest, judged.state, judged.reason, gates=judged.gates)
            return
        if late and manifest.when == "before":
            self._set(manifest, "failed",
                      f"{manifest.target} was imported before sglang_shims.install(), and this"
                      " patch must act before its body runs; start the process with the shims"
                      " active (`python -m sglang_shims.launch ...` or the .pth)",
                      gates=judged.gates)
            return
        from .journal import PatchContext, Retired, restore, snapshot, where_in_patch

        ctx = PatchContext(manifest, module, self.env.versions, self.claims, gpus=self.env.gpu)
        before = snapshot(module)
        try:
            self._provide(manifest, ctx)
            if manifest.code:
                _catalog.load_code(manifest).apply(ctx)
        except Retired as signal:
            ctx.undo()
            restore(module, before)
            self._forget_proxies(manifest.id)
            self._set(manifest, "retired", str(signal), gates=judged.gates, notes=ctx.notes)
            return
        except Exception as exc:
            errors = ctx.undo()
            fixed = restore(module, before)
            self._forget_proxies(manifest.id)
            reason = f"{where_in_patch(exc, manifest)}{type(exc).__name__}: {exc}; rolled back"
            if errors:
                reason += f" (undo errors: {'; '.join(errors)})"
            if fixed:
                reason += f" (restored {manifest.target} attributes changed outside the" \
                          f" journal: {', '.join(fixed)})"
            self.log.debug("%s failed:", manifest.id, exc_info=True)
            self._set(manifest, "failed", reason, gates=judged.gates, notes=ctx.notes)
            return
        with self.lock:
            self.contexts[manifest.id] = ctx
            self.specs[manifest.id] = getattr(module, "__spec__", None)
            self.order.append(manifest.id)
            self._adopt_proxies(manifest, module)
        reason = judged.reason + (" (late: target was imported before install())" if late else "")
        self._set(manifest, "applied", reason, gates=judged.gates, late=late,
                  changes=ctx.changes, notes=ctx.notes, details=ctx.details)

    def _provide(self, manifest: Manifest, ctx: PatchContext) -> None:
        module = ctx.module
        for provide in manifest.provides:
            if provide.name in vars(module):
                ctx.note(f"{manifest.target}.{provide.name} exists; left as it is")
                continue
            from .proxy import OptionalSymbol

            proxy = OptionalSymbol(manifest.target, provide.name, manifest.id,
                                   self._explainer(manifest, provide), provide.substitute)
            ctx.setattr(module, provide.name, proxy)
            with self.lock:
                self.proxies[f"{manifest.target}.{provide.name}"] = proxy

    def _adopt_proxies(self, manifest: Manifest, module: ModuleType) -> None:
        """List in status() the proxies a patch's code bound on its target (per name),
        as [[provide]] proxies are: bound attributes, and those a module ``__getattr__``
        it installed serves (its ``proxies``).  Call with the lock held."""
        from .proxy import OptionalSymbol

        found = dict(vars(module))
        found.update(getattr(found.get("__getattr__"), "proxies", None) or {})
        for name, value in found.items():
            if isinstance(value, OptionalSymbol) and value.patch_id == manifest.id:
                self.proxies.setdefault(f"{manifest.target}.{name}", value)

    def _forget_proxies(self, patch_id: str) -> None:
        with self.lock:
            for key in [k for k, p in self.proxies.items() if p.patch_id == patch_id]:
                del self.proxies[key]

    def _explainer(self, manifest: Manifest, provide: Provide) -> Any:
        def explain() -> str:
            dists = provide.provider_dists
            installed = "the installed kernel"
            if dists:
                dist, version = self.env.first_installed(dists)
                installed = (f"the installed {dist} {version}" if version else
                             f"the installed package (no {' or '.join(dists)} distribution"
                             " found)")
            return (f"{manifest.target}.{provide.name} is not available: {installed} does not"
                    f" export it. It was exported by {provide.exported_by}. {provide.remedy}"
                    f" [sglang-shims patch {manifest.id!r} supplies the name so that importing"
                    f" sglang works; see `sglang-shims explain {manifest.id}`]")

        return explain

    def _enforce(self, manifest: Manifest) -> None:
        record = self.records[manifest.id]
        required = manifest.policy == "required"
        strict = self.toggles.strict
        bad = record.state in ("failed", "drifted") and (strict or required)
        if record.state == "disabled" and strict and required:
            bad = True
        if bad:
            why = "strict mode (SGLANG_SHIMS_STRICT=1)" if strict else "it is required"
            raise ShimImportError(
                f"sglang-shims: patch {manifest.id!r} is {record.state}: {record.reason}."
                f" Importing {manifest.target} is stopped because of {why};"
                f" see `sglang-shims explain {manifest.id}`")

    # -- install / revert ----------------------------------------------------------------

    def watch_pending(self) -> None:
        """Make sure every pending patch's target will be caught when imported."""
        import sys

        names = {m.target for m in self.manifests.values()
                 if self.records[m.id].state == "pending" and m.target not in sys.modules}
        _bootstrap.watch(names)

    def patch_imported(self) -> None:
        """Apply pending patches whose target was imported before we were installed."""
        import sys

        for manifest in sorted(self.manifests.values(), key=lambda m: m.id):
            module = sys.modules.get(manifest.target)
            if module is None or self.records[manifest.id].state != "pending":
                continue
            if getattr(getattr(module, "__spec__", None), "_initializing", False):
                self.records[manifest.id].notes.append(
                    f"{manifest.target} was still being imported when install() ran")
                continue
            self.run(manifest, module, late=True)

    def revert(self) -> list[str]:
        """Undo every applied patch, newest first; returns undo errors, if any."""
        errors: list[str] = []
        with self.lock:
            for patch_id in reversed(self.order):
                ctx = self.contexts.pop(patch_id)
                errors += [f"{patch_id}: {e}" for e in ctx.undo()]
                self._forget_proxies(patch_id)
                manifest = self.manifests[patch_id]
                self._set(manifest, "reverted", "undone by sglang_shims.revert()")
            self.order.clear()
            watcher, self.boot.watcher = self.boot.watcher, None
            if watcher is not None:
                watcher.uninstall()
        self.write_report()
        return errors

    def reset_reverted(self) -> None:
        with self.lock:
            for patch_id, record in self.records.items():
                if record.state == "reverted":
                    on, by = self.enabled[patch_id]
                    self.records[patch_id] = self._fresh(self.manifests[patch_id], on, by)

    # -- reporting -----------------------------------------------------------------------

    def _follow_process_title(self) -> None:
        """Rewrite the report when the process names itself (``sglang::scheduler_TP0``).

        sglang sets its process titles with ``setproctitle`` after our patches ran, and
        the title is the only reliable role of a spawned child; so, only when reports are
        written, ``setproctitle.setproctitle`` is wrapped to write the report again.
        """
        import sys

        module = sys.modules.get("setproctitle")
        if module is not None:
            self._wrap_title(module)
        else:
            _bootstrap.watch({"setproctitle"})

    def _wrap_title(self, module: ModuleType) -> None:
        original = getattr(module, "setproctitle", None)
        if original is None or getattr(original, "_sglang_shims_report", False):
            return

        def setproctitle(title: str, *args: Any, **kwargs: Any) -> Any:
            result = original(title, *args, **kwargs)
            self.write_report()
            return result

        setproctitle._sglang_shims_report = True  # type: ignore[attr-defined]
        module.setproctitle = setproctitle  # type: ignore[attr-defined]

    def summarise(self) -> None:
        if self.summarised:
            return
        self.summarised = True
        self.log.info("%s [origin %s, role %s]", _report.summary(self.observed()), self.origin,
                      _report.role())

    def write_report(self) -> None:
        directory = _report.report_dir()
        if not directory:
            return
        try:
            data = _report.payload(self.observed(), self.origin, self.warnings, self.timing)
            for patch_id, entry in self.status().items():
                data["patches"][patch_id]["proxies"] = entry["proxies"]
            _report.write(directory, data)
        except Exception as exc:
            if not self.report_problem:
                self.report_problem = True
                self.log.warning("cannot write the report to %s: %s", directory, exc)

    def at_exit(self) -> None:
        self.summarise()
        self.write_report()

    def forked(self) -> None:
        """Run in a fork child right after ``os.fork()``: report it, honestly labelled.

        A fork child inherits the parent's patched modules and this engine, but not the
        chance to report: multiprocessing's fork children leave through ``os._exit``,
        which skips ``atexit``.  So the child writes its report now, marked as the state
        inherited from its parent; in a multiprocessing child it writes again, as its
        own, when the child's work is done (multiprocessing's exit finalizers do run).
        """
        import sys

        self.lock = threading.RLock()  # a parent thread may have held it during fork
        parent = os.getppid()
        _report.note_fork(parent, inherited=True)
        self.write_report()
        _report.note_fork(parent, inherited=False)
        mp_util = sys.modules.get("multiprocessing.util")
        if mp_util is not None:
            # runs once multiprocessing has set up the child (its name, its finalizers)
            mp_util.register_after_fork(self, _report_at_child_exit)


def _report_at_child_exit(engine: Engine) -> None:
    import multiprocessing.util as mp_util

    mp_util.Finalize(None, engine.at_exit, exitpriority=-100)


def _after_fork_in_child() -> None:
    if _engine is not None:
        try:
            _engine.forked()
        except Exception:  # never break the user's fork
            pass


_lock = threading.Lock()
_engine: Engine | None = None
if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_after_fork_in_child)


def get(boot: _bootstrap.Boot | None = None) -> Engine:
    """The process's engine, built on first use from the bootstrap's state.

    Besides building it, this is where a process gets what only the process's own engine
    should have: our log handler, the warnings on stderr, the ``atexit`` report, and the
    wake-up time (``timing["wake_ms"]``, from the first watched import to here).
    """
    global _engine
    if _engine is None:
        with _lock:
            if _engine is None:
                boot = boot or _bootstrap.BOOT
                log, level_problem = _log.configure()
                toggles = boot.toggles if isinstance(boot.toggles, _toggles.Toggles) \
                    else _toggles.Toggles()
                engine = Engine(boot, _catalog.load(_bootstrap.env("SGLANG_SHIMS_PATH")),
                                toggles, log=log)
                engine.announce([level_problem] if level_problem else [])
                atexit.register(engine.at_exit)
                if _report.report_dir():  # resolved now, before the program can change directory
                    engine._follow_process_title()
                if boot.woke is not None:
                    engine.timing["wake_ms"] = (time.perf_counter() - boot.woke) * 1000
                    engine.timing["wake_cpu_ms"] = (time.thread_time() - boot.woke_cpu) * 1000
                _engine = engine
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
