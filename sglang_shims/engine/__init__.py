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
import threading
import traceback
from types import ModuleType
from typing import Any

from .. import _bootstrap, _toggles
from ..catalog import load as _catalog
from ..catalog.manifest import Manifest, Provide
from . import log as _log
from . import record as _report
from .gates import Environment
from .journal import PatchContext, Retired, restore, snapshot, where_in_patch
from .judge import assess
from .proxy import OptionalSymbol


class ShimImportError(ImportError):
    """A patch that had to work did not (strict mode, or policy ``required``)."""


class Engine:
    def __init__(self) -> None:
        state = _bootstrap.STATE
        self.origin = str(state.get("origin") or "install")
        toggles = state.get("toggles")
        self.toggles = toggles if isinstance(toggles, _toggles.Toggles) else _toggles.Toggles()
        self.log, level_problem = _log.configure()
        self.lock = threading.RLock()
        self.env = Environment()
        self.catalog = _catalog.load(_bootstrap.env("SGLANG_SHIMS_PATH"))
        self.manifests = self.catalog.by_id()
        self.records: dict[str, _report.Record] = {}
        self.enabled: dict[str, tuple[bool, str]] = {}
        self.contexts: dict[str, PatchContext] = {}
        self.proxies: dict[str, OptionalSymbol] = {}
        self.claims: dict[tuple[int, str], str] = {}
        self.standing_in: dict[str, tuple[Manifest, str]] = {}
        self.order: list[str] = []
        self.running: set[str] = set()
        self.summarised = False
        self.report_problem = False
        self.invalid_reported = False
        for manifest in self.manifests.values():
            on, by = self.toggles.decide(manifest.id, manifest.default)
            self.enabled[manifest.id] = (on, by)
            self.records[manifest.id] = self._fresh(manifest, on, by)
        for folder, error in self.catalog.errors.items():
            self.records[folder] = _report.Record(folder, "failed", error)
        self.warnings = list(self.toggles.problems)
        if level_problem:
            self.warnings.append(level_problem)
        self.warnings += self.toggles.unknown(list(self.manifests) + list(self.catalog.errors))
        self.warnings += self.catalog.warnings
        self.warnings += self._stale_table()
        for warning in self.warnings:
            self.log.warning("%s", warning)
        for folder, error in self.catalog.errors.items():
            self.log.warning("patch %s not loaded: %s", folder, error)
        atexit.register(self.at_exit)
        if _report.report_dir():  # resolved now, before the program can change directory
            self._follow_process_title()

    # -- state ---------------------------------------------------------------------------

    @staticmethod
    def _fresh(manifest: Manifest, on: bool, by: str) -> _report.Record:
        state, reason = ("pending", f"waiting for {manifest.target} to be imported") if on \
            else ("disabled", f"disabled by {by}")
        return _report.Record(
            manifest.id, state, reason, summary=manifest.summary, target=manifest.target,
            when=manifest.when, policy=manifest.policy, source=manifest.source)

    def _stale_table(self) -> list[str]:
        table = {m.id: (m.target, m.default, m.policy == "required", m.when == "instead")
                 for m in self.manifests.values() if m.source == "builtin"}
        if table != _bootstrap.PATCHES:
            return ["the bootstrap watch table does not match the shipped manifests;"
                    " run `python -m sglang_shims.catalog.codegen --write`"
                    " (a development install?)"]
        return []

    def status(self) -> dict[str, dict[str, Any]]:
        import sys

        with self.lock:
            out = {}
            for patch_id, record in self.records.items():
                entry = record.as_dict()
                ctx = self.contexts.get(patch_id)
                current = sys.modules.get(record.target)
                if ctx is not None and current is not None and current is not ctx.module:
                    # importlib.reload() or a re-import made a new, stock module object
                    entry["stale"] = True
                    entry["notes"] = [*entry["notes"], f"{record.target} was imported again"
                                      " after this patch was applied; the new module is stock"]
                entry["proxies"] = {name: proxy.report() for name, proxy in self.proxies.items()
                                    if proxy.patch_id == patch_id}
                out[patch_id] = entry
            return out

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
        watcher = _bootstrap.STATE.get("watcher")
        if phase == "after" and isinstance(watcher, _bootstrap.Watcher) and not watcher.names:
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
            judged = assess(manifest, self.env, on, by)
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
        ctx = PatchContext(manifest, module, self.env.versions, self.claims)
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
        ctx = PatchContext(manifest, module, self.env.versions, self.claims)
        ctx.cause = reason
        try:
            _catalog.load_code(manifest).provide(ctx)
        except Exception as exc:
            self.log.debug("%s failed:\n%s", manifest.id, traceback.format_exc())
            self._set(manifest, "failed", f"provide() raised {type(exc).__name__}: {exc}")
            raise ShimImportError(
                f"sglang-shims: patch {manifest.id!r} could not stand in for {name}"
                f" ({reason}): {type(exc).__name__}: {exc}") from exc
        with self.lock:
            self.contexts[manifest.id] = ctx
            self.order.append(manifest.id)
        self._set(manifest, "applied", f"standing in for {name}: {reason}",
                  changes=ctx.changes, notes=ctx.notes)
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
        import time

        record = self.records[manifest.id]
        record.state, record.reason, record.at = state, reason, time.time()
        for key, value in extra.items():
            setattr(record, key, value)
        level = {"applied": "info", "failed": "warning", "drifted": "warning"}.get(state, "debug")
        getattr(self.log, level)("%s: %s (%s)", manifest.id, state, reason)

    def _decide_and_apply(self, manifest: Manifest, module: ModuleType, late: bool) -> None:
        on, by = self.enabled[manifest.id]
        live = module if manifest.when == "after" else None
        judged = assess(manifest, self.env, on, by, live)
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
        ctx = PatchContext(manifest, module, self.env.versions, self.claims)
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
            self.log.debug("%s failed:\n%s", manifest.id, traceback.format_exc())
            self._set(manifest, "failed", reason, gates=judged.gates, notes=ctx.notes)
            return
        with self.lock:
            self.contexts[manifest.id] = ctx
            self.order.append(manifest.id)
        reason = judged.reason + (" (late: target was imported before install())" if late else "")
        self._set(manifest, "applied", reason, gates=judged.gates, late=late,
                  changes=ctx.changes, notes=ctx.notes)

    def _provide(self, manifest: Manifest, ctx: PatchContext) -> None:
        module = ctx.module
        for provide in manifest.provides:
            if provide.name in vars(module):
                ctx.note(f"{manifest.target}.{provide.name} exists; left as it is")
                continue
            proxy = OptionalSymbol(manifest.target, provide.name, manifest.id,
                                   self._explainer(manifest, provide), provide.substitute)
            ctx.setattr(module, provide.name, proxy)
            with self.lock:
                self.proxies[f"{manifest.target}.{provide.name}"] = proxy

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
            watcher = _bootstrap.STATE.pop("watcher", None)
            if isinstance(watcher, _bootstrap.Watcher):
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
        self.log.info("%s [origin %s, role %s]", _report.summary(self.records), self.origin,
                      _report.role())

    def write_report(self) -> None:
        directory = _report.report_dir()
        if not directory:
            return
        try:
            data = _report.payload(self.records, self.origin, self.warnings)
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


_lock = threading.Lock()
_engine: Engine | None = None


def get() -> Engine:
    global _engine
    if _engine is None:
        with _lock:
            if _engine is None:
                _engine = Engine()
    return _engine


def on_loader_event(name: str, phase: str, module: Any,
                    exc: BaseException | None) -> str | None:
    return get().on_event(name, phase, module, exc)


def extra_watch_names() -> set[str]:
    """Targets of the enabled patches (any folder): called at start-up when
    ``SGLANG_SHIMS_PATH`` is set, since the built-in table cannot know them."""
    engine = get()
    return {m.target for m in engine.manifests.values()
            if m.source != "builtin" and engine.enabled[m.id][0]}


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
