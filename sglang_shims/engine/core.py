"""The :class:`Engine`: one loader event in, every patch it triggers judged, applied, recorded.

For each patch triggered by an event the engine takes the patch (exactly once per
process, whatever the threads), judges it (:mod:`.judge`), applies it through a journal
(:mod:`.journal`), rolls it back on failure, records the outcome (:mod:`.record`) and, in
strict mode or for a ``required`` patch, turns a failure into the ImportError of the
target.  Patches that stand in for a whole module follow :mod:`.standin`; what
``status()`` says is checked against the modules as they are now by :mod:`.observe`.
Nothing here belongs to a process (no log handler, no ``atexit``, no report file): the
process's engine gets those from :mod:`.process`, through :attr:`Engine.on_change` and
:attr:`Engine.on_import`.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any

from .. import _bootstrap, _toggles
from ..catalog import load
from ..catalog.manifest import Manifest, Provide
from . import standin
from .gates import Environment
from .judge import WOULD_APPLY, Assessment, assess
from .record import Record, State, role, summary

if TYPE_CHECKING:
    # Loaded where a patch is applied (journal) or a name provided (proxy), not to judge:
    # a process where no patch acts never imports them.
    from .journal import PatchContext
    from .proxy import OptionalSymbol
# For the same reason the public errors (raised only to stop an import) and observe (read by
# status() and the report, not while waking or judging) are imported where they are used.

_LOG_LEVEL = {State.APPLIED: "info", State.FAILED: "warning", State.DRIFTED: "warning"}
"""How loud each new state is logged; every other state at debug."""


class Engine:
    """Judges, applies and records the patches of one process.

    It receives everything it works from -- the bootstrap's :class:`~sglang_shims._bootstrap.Boot`,
    the catalog, the toggles, the environment -- and touches nothing global while being
    built, so tests build one in-process; :func:`~sglang_shims.engine.process.get` builds
    the process's own and adds what belongs to a process (the log handler, the report).
    """

    def __init__(self, boot: _bootstrap.Boot, catalog: load.Catalog,
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
        self.records: dict[str, Record] = {}
        self.enabled: dict[str, tuple[bool, str]] = {}
        self.contexts: dict[str, PatchContext] = {}
        self.proxies: dict[str, OptionalSymbol] = {}
        self.claims: dict[tuple[int, str], str] = {}
        self.standing_in: dict[str, tuple[Manifest, str]] = {}
        self.order: list[str] = []
        self.running: set[str] = set()
        self.loading: set[str] = set()  # watched modules whose body our loader is running
        # patch id -> the module it changed and that module's __spec__ then (observe.py)
        self.patched: dict[str, tuple[ModuleType, object]] = {}
        self.summarised = False
        self.invalid_reported = False
        self.timing: dict[str, float] = {"judge_ms": 0.0, "judge_cpu_ms": 0.0}
        self.on_change: Callable[[Engine], None] | None = None
        """Called after records changed (the process's engine rewrites its report)."""
        self.on_import: dict[str, Callable[[Engine, ModuleType], None]] = {}
        """Module name -> called when that watched module has been imported, before any
        patch on it (the process's engine follows ``setproctitle``)."""
        for manifest in self.manifests.values():
            on, by = self.toggles.decide(manifest.id, manifest.default)
            self.enabled[manifest.id] = (on, by)
            self.records[manifest.id] = self._new_record(manifest, on, by)
        for folder, error in self.catalog.errors.items():
            # a refused extra folder may carry a built-in's name: never hide the built-in
            key = folder if folder not in self.records else f"{folder} (extra folder)"
            self.records[key] = Record(key, State.FAILED, error)
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
    def _new_record(manifest: Manifest, on: bool, by: str) -> Record:
        state, reason = (State.PENDING, f"waiting for {manifest.target} to be imported") if on \
            else (State.DISABLED, f"disabled by {by}")
        return Record(
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
        """The records as plain data (states as strings), each with its proxies."""
        with self.lock:
            out = {}
            for patch_id, record in self.observed().items():
                entry = record.as_dict()
                entry["proxies"] = {name: proxy.report() for name, proxy in self.proxies.items()
                                    if proxy.patch_id == patch_id}
                untested = self.untested_ground(record)
                if untested:
                    entry["untested"] = untested
                out[patch_id] = entry
            return out

    def untested_ground(self, record: Record) -> list[str]:
        """Why a judged patch was judged on releases newer than the catalog's data (its
        gates are open-ended there): one line per such distribution, else none."""
        manifest = self.manifests.get(record.id)
        if manifest is None or record.state in (State.PENDING, State.DISABLED):
            return []
        from ..catalog import tested

        return tested.untested([d for gate in manifest.requires for d in gate.dists],
                               self.env.version)

    def observed(self) -> dict[str, Record]:
        """The records, checked against the modules as they are now (:func:`observe.seen`)."""
        from . import observe

        with self.lock:
            return {patch_id: observe.seen(record, sys.modules.get(record.target),
                                           self.patched.get(patch_id),
                                           record.target in self.loading, self.boot.watcher)
                    for patch_id, record in self.records.items()}

    def set_state(self, manifest: Manifest, state: State, reason: str, **extra: Any) -> None:
        """Record a patch's new state and why (with any other fields), and log it."""
        record = self.records[manifest.id]
        record.state, record.reason, record.at = state, reason, time.time()
        for key, value in extra.items():
            setattr(record, key, value)
        level = _LOG_LEVEL.get(state, "debug")
        getattr(self.log, level)("%s: %s (%s)", manifest.id, state, reason)

    def keep(self, manifest: Manifest, ctx: PatchContext) -> None:
        """Keep an applied patch's journal, for :meth:`revert` and for :func:`observe.seen`.
        Call with the lock held."""
        self.contexts[manifest.id] = ctx
        self.patched[manifest.id] = (ctx.module, getattr(ctx.module, "__spec__", None))
        self.order.append(manifest.id)

    def context(self, manifest: Manifest, module: ModuleType, cause: str = "") -> PatchContext:
        """A fresh journal for one patch on ``module``, sharing this process's claims."""
        from .journal import PatchContext

        return PatchContext(manifest, module, self.env, self.claims, cause=cause)

    def changed(self) -> None:
        """Tell the process that records changed (see :attr:`on_change`)."""
        if self.on_change is not None:
            self.on_change(self)

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
            from .._errors import ShimImportError

            raise ShimImportError(f"sglang-shims: strict mode and a patch could not be loaded:"
                                  f" {problems}")
        hook = self.on_import.get(name) if phase == "after" else None
        if hook is not None:
            hook(self, module)
        answer = None
        if phase == "before":
            self.loading.add(name)
            answer = standin.before(self, name, module)
        elif phase == "instead":
            standin.provide(self, name, module)
            return None
        elif phase == "error":
            assert exc is not None
            self.loading.discard(name)
            answer = standin.after_error(self, name, module, exc)
            if answer is None:
                for manifest in self.triggered_by(name, "after"):
                    record = self.records[manifest.id]
                    if record.state is State.PENDING:
                        record.notes.append(
                            f"importing {name} raised {type(exc).__name__}: {exc}")
                self.changed()
            return answer
        elif phase == "after":
            standin.real_module_served(self, name)
        for manifest in self.triggered_by(name, phase):
            self.judge_and_apply(manifest, module)
        if phase == "after":
            self.loading.discard(name)
            watcher = self.boot.watcher
            if watcher is not None and not watcher.names:
                self.summarise()
        return answer

    # -- judging and applying ------------------------------------------------------------

    def judge_and_apply(self, manifest: Manifest, module: ModuleType, late: bool = False) -> None:
        """Decide and apply one patch; only the first caller per process gets to."""
        with self.lock:
            record = self.records[manifest.id]
            if manifest.id in self.running or record.state not in (State.PENDING,
                                                                   State.DISABLED):
                return
            if record.state is State.DISABLED and not self._strict_required(manifest):
                return
            self.running.add(manifest.id)
        try:
            self._decide_and_apply(manifest, module, late)
        finally:
            with self.lock:
                self.running.discard(manifest.id)
        self.changed()
        self.enforce(manifest)

    def _strict_required(self, manifest: Manifest) -> bool:
        return self.toggles.strict and manifest.policy == "required"

    def _decide_and_apply(self, manifest: Manifest, module: ModuleType, late: bool) -> None:
        on, by = self.enabled[manifest.id]
        live = module if manifest.when == "after" else None
        judged = self.judge(manifest, on, by, live)
        if judged.state != WOULD_APPLY:
            self.set_state(manifest, judged.state, judged.reason, gates=judged.gates)
            return
        if late and manifest.when == "before":
            self.set_state(
                manifest, State.FAILED,
                f"{manifest.target} was imported before sglang_shims.install(), and this"
                " patch must act before its body runs; start the process with the shims"
                " active (`python -m sglang_shims.launch ...` or the .pth)",
                gates=judged.gates)
            return
        from . import journal

        ctx = self.context(manifest, module)
        before = journal.snapshot(module)
        self.log.debug("applying %s to %s", manifest.id, manifest.target)
        try:
            self._provide(manifest, ctx)
            if manifest.code:
                load.load_code(manifest).apply(ctx)
        except journal.Retired as signal:
            journal.undo(ctx)
            journal.restore(module, before)
            self._forget_proxies(manifest.id)
            self.set_state(manifest, State.RETIRED, str(signal), gates=judged.gates,
                           notes=ctx.notes)
            return
        except Exception as exc:
            errors = journal.undo(ctx)
            fixed = journal.restore(module, before)
            self._forget_proxies(manifest.id)
            reason = (f"{journal.where_in_patch(exc, manifest)}{type(exc).__name__}: {exc};"
                      " rolled back")
            if errors:
                reason += f" (undo errors: {'; '.join(errors)})"
            if fixed:
                reason += f" (restored {manifest.target} attributes changed outside the" \
                          f" journal: {', '.join(fixed)})"
            self.log.debug("%s failed:", manifest.id, exc_info=True)
            self.set_state(manifest, State.FAILED, reason, gates=judged.gates, notes=ctx.notes)
            return
        except BaseException as exc:
            # Ctrl-C, SystemExit: undone like a failure, then passed on, so that the program
            # stops as it would without us; the one line names the patch that was running
            journal.undo(ctx)
            journal.restore(module, before)
            self._forget_proxies(manifest.id)
            self.set_state(manifest, State.FAILED, journal.interrupted(exc, manifest, "it ran"),
                           gates=judged.gates, notes=ctx.notes)
            raise
        with self.lock:
            self.keep(manifest, ctx)
            self._adopt_proxies(manifest, module)
        reason = judged.reason + (" (late: target was imported before install())" if late else "")
        self.set_state(manifest, State.APPLIED, reason, gates=judged.gates, late=late,
                       changes=journal.changes(ctx), notes=ctx.notes, details=ctx.details)

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

    def _explainer(self, manifest: Manifest, provide: Provide) -> Callable[[], str]:
        def explain() -> str:
            from .proxy import unavailable  # with the proxy that raises it, not at wake-up

            dists = provide.provider_dists
            installed = "the installed kernel"
            if dists:
                dist, version = self.env.first_installed(dists)
                installed = (f"the installed {dist} {version}" if version else
                             f"the installed package (no {' or '.join(dists)} distribution"
                             " found)")
            return unavailable(f"{manifest.target}.{provide.name}",
                               f"{installed} does not export it. It was exported by"
                               f" {provide.exported_by}", provide.remedy, manifest.id)

        return explain

    def enforce(self, manifest: Manifest) -> None:
        """Stop the target's import when a failed patch must not be passed over: in strict
        mode, or for a ``required`` patch."""
        record = self.records[manifest.id]
        required = manifest.policy == "required"
        strict = self.toggles.strict
        bad = record.state in (State.FAILED, State.DRIFTED) and (strict or required)
        if record.state is State.DISABLED and strict and required:
            bad = True
        if bad:
            why = "strict mode (SGLANG_SHIMS_STRICT=1)" if strict else "it is required"
            from .._errors import ShimImportError

            raise ShimImportError(
                f"sglang-shims: patch {manifest.id!r} is {record.state}: {record.reason}."
                f" Importing {manifest.target} is stopped because of {why};"
                f" see `sglang-shims explain {manifest.id}`")

    # -- install / revert ----------------------------------------------------------------

    def watch_pending(self) -> None:
        """Make sure every pending patch's target will be caught when imported."""
        names = {m.target for m in self.manifests.values()
                 if self.records[m.id].state is State.PENDING and m.target not in sys.modules}
        _bootstrap.watch(names)

    def patch_imported(self) -> None:
        """Apply pending patches whose target was imported before we were installed."""
        for manifest in sorted(self.manifests.values(), key=lambda m: m.id):
            module = sys.modules.get(manifest.target)
            if module is None or self.records[manifest.id].state is not State.PENDING:
                continue
            if getattr(getattr(module, "__spec__", None), "_initializing", False):
                self.records[manifest.id].notes.append(
                    f"{manifest.target} was still being imported when install() ran")
                continue
            self.judge_and_apply(manifest, module, late=True)

    def revert(self) -> list[str]:
        """Undo every applied patch, newest first; returns undo errors, if any."""
        from . import journal

        errors: list[str] = []
        with self.lock:
            for patch_id in reversed(self.order):
                ctx = self.contexts.pop(patch_id)
                errors += [f"{patch_id}: {e}" for e in journal.undo(ctx)]
                self._forget_proxies(patch_id)
                manifest = self.manifests[patch_id]
                self.set_state(manifest, State.REVERTED, "undone by sglang_shims.revert()")
            self.order.clear()
            watcher, self.boot.watcher = self.boot.watcher, None
            if watcher is not None:
                watcher.uninstall()
        self.changed()
        return errors

    def reset_reverted(self) -> None:
        with self.lock:
            for patch_id, record in self.records.items():
                if record.state is State.REVERTED:
                    on, by = self.enabled[patch_id]
                    self.records[patch_id] = self._new_record(self.manifests[patch_id], on, by)

    def summarise(self) -> None:
        """Log one line of counts per state, once (all watched modules imported, or exit)."""
        if self.summarised:
            return
        self.summarised = True
        self.log.info("%s [origin %s, role %s]", summary(self.observed()), self.origin, role())

