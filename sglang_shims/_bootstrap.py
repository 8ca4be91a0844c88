"""The only code of sglang-shims that runs in every Python process.

``sglang_shims.pth`` (Python <= 3.14) imports this module and calls :func:`activate`;
``sglang_shims.start`` (PEP 829, Python >= 3.15) calls :func:`start`.  Everything here
runs during ``site`` initialisation of *every* interpreter in the environment -- pip,
build back-ends, spawn workers -- so it obeys three rules:

* It imports nothing.  ``sys`` and ``os`` are loaded before ``site`` runs; anything else
  (``threading``, ``typing``, ``importlib.metadata``) would cost milliseconds on every start.
* It never raises.  A failure is remembered and reported once, on stderr, when a module
  we watch is first imported -- the only moment it matters.
* It wakes the real engine (``_engine``) only when a watched module is being executed,
  from the loader, never from ``find_spec``: importing from inside ``find_spec`` holds the
  global import lock while taking module locks, the A-B deadlock ddtrace hit (#17742).

The watch table below is generated from the manifests under ``patches/``
(``python -m sglang_shims._index --write``); a test fails when it is stale.
"""

import os
import sys

# ``typing`` costs milliseconds at start-up; mypy treats any name TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from importlib.machinery import ModuleSpec
    from types import ModuleType

# BEGIN GENERATED WATCH TABLE
# patch id -> (module whose import triggers it, on by default, policy is required)
PATCHES: dict[str, tuple[str, bool, bool]] = {
    "sgl-kernel-dist-renamed": ("sglang.srt.entrypoints.engine", True, False),
    "sgl-kernel-fused-marlin-moe": ("sgl_kernel", True, False),
}
# END GENERATED WATCH TABLE

OFF = frozenset({"0", "false", "off", "no"})
ON = frozenset({"1", "true", "on", "yes"})
PATCH_VAR_PREFIX = "SGLANG_SHIMS_PATCH_"


def env(name: str, environ: "os._Environ[str] | dict[str, str] | None" = None) -> "str | None":
    """Return a stripped environment value; an empty value means unset."""
    value = (os.environ if environ is None else environ).get(name)
    if value is None:
        return None
    value = value.strip()
    return value or None


def globally_off(environ: "dict[str, str] | None" = None) -> bool:
    """``SGLANG_SHIMS=0`` (or false/off/no): the kill switch, checked before anything else."""
    value = env("SGLANG_SHIMS", environ)
    return value is not None and value.lower() in OFF


def patch_var(patch_id: str) -> str:
    """``sgl-kernel-dist-renamed`` -> ``SGLANG_SHIMS_PATCH_SGL_KERNEL_DIST_RENAMED``."""
    return PATCH_VAR_PREFIX + patch_id.upper().replace("-", "_").replace(".", "_")


def split_ids(value: "str | None") -> "list[str]":
    """Split an id list: commas and/or whitespace separate, case is ignored."""
    if not value:
        return []
    return [part.strip().lower() for part in value.replace(",", " ").split() if part.strip()]


class Toggles:
    """What the ``SGLANG_SHIMS_*`` variables ask for, read once per process.

    The per-patch variable wins over the lists; a patch named in both lists is
    disabled (the safe reading) and the conflict is reported.  Problems (unknown
    ids, unreadable values) are collected, never raised: they are reported when
    the engine wakes, next to the patches they concern.
    """

    __slots__ = ("all_off", "disable", "enable", "per_patch", "problems", "strict")

    def __init__(self, environ: "dict[str, str] | os._Environ[str] | None" = None) -> None:
        environ = os.environ if environ is None else environ
        self.problems: list[str] = []
        self.all_off = globally_off(environ)  # type: ignore[arg-type]
        main = env("SGLANG_SHIMS", environ)
        if main is not None and main.lower() not in OFF | ON:
            self.problems.append(
                f"SGLANG_SHIMS={main!r} is neither on (1/true/on/yes) nor off (0/false/off/no);"
                " treating it as on"
            )
        self.disable = split_ids(env("SGLANG_SHIMS_DISABLE", environ))
        self.enable = split_ids(env("SGLANG_SHIMS_ENABLE", environ))
        strict = env("SGLANG_SHIMS_STRICT", environ)
        self.strict = strict is not None and strict.lower() in ON
        if strict is not None and strict.lower() not in ON | OFF:
            self.problems.append(f"SGLANG_SHIMS_STRICT={strict!r} is not 0/1; strict mode is off")
        self.per_patch: dict[str, bool] = {}
        for name, raw in environ.items():
            if not name.startswith(PATCH_VAR_PREFIX):
                continue
            value = raw.strip().lower()
            if not value:
                continue
            if value in ON:
                self.per_patch[name] = True
            elif value in OFF:
                self.per_patch[name] = False
            else:
                self.problems.append(f"{name}={raw!r} is not 0 or 1; ignored")

    def decide(self, patch_id: str, default: bool) -> "tuple[bool, str]":
        """Return (enabled, which setting decided it) for one patch."""
        if self.all_off:
            return False, "SGLANG_SHIMS=0"
        var = patch_var(patch_id)
        if var in self.per_patch:
            on = self.per_patch[var]
            return on, f"{var}={int(on)}"
        key = patch_id.lower()
        if key in self.disable:
            return False, "SGLANG_SHIMS_DISABLE"
        if key in self.enable:
            return True, "SGLANG_SHIMS_ENABLE"
        return default, "default"

    def unknown(self, known_ids: "list[str]") -> "list[str]":
        """Messages for every toggle that names no known patch, listing the known ids."""
        known = {i.lower() for i in known_ids}
        known_vars = {patch_var(i) for i in known_ids}
        listing = ", ".join(sorted(known_ids)) or "(none)"
        out: list[str] = []
        for var_name, ids in (("SGLANG_SHIMS_DISABLE", self.disable),
                              ("SGLANG_SHIMS_ENABLE", self.enable)):
            out.extend(f"{var_name} names unknown patch {i!r}; known ids: {listing}"
                       for i in ids if i not in known)
        out.extend(f"{var} matches no known patch; known ids: {listing}"
                   for var in sorted(self.per_patch) if var not in known_vars)
        out.extend(f"patch {i!r} is in both SGLANG_SHIMS_ENABLE and SGLANG_SHIMS_DISABLE;"
                   " it stays disabled" for i in self.enable if i in self.disable)
        return out


class Watcher:
    """A ``sys.meta_path`` finder that answers only for the module names it watches.

    For a watched name it asks the *other* finders on ``sys.meta_path`` for the spec
    (an editable sglang is served by setuptools' finder, not ``PathFinder``) and
    wraps the loader it gets; for every other name it costs one set lookup.
    """

    def __init__(self, names: "set[str]") -> None:
        self.names = set(names)
        self._finding: set[str] = set()

    def find_spec(self, fullname: str, path: "Sequence[str] | None" = None,
                  target: "ModuleType | None" = None) -> "ModuleSpec | None":
        if fullname not in self.names or fullname in self._finding:
            return None
        # The caller holds the import lock for this name, so one guard per name suffices.
        self._finding.add(fullname)
        try:
            spec = None
            for finder in list(sys.meta_path):
                if finder is self:
                    continue
                find = getattr(finder, "find_spec", None)
                if find is None:
                    continue
                spec = find(fullname, path, target)
                if spec is not None:
                    break
        finally:
            self._finding.discard(fullname)
        loader = getattr(spec, "loader", None)
        if spec is not None and loader is not None and hasattr(loader, "exec_module"):
            spec.loader = HookedLoader(loader, fullname, self)
        return spec

    def done(self, fullname: str) -> None:
        """Stop watching one name; leave ``sys.meta_path`` once nothing is left."""
        self.names.discard(fullname)
        if not self.names:
            self.uninstall()

    def uninstall(self) -> None:
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass

    def invalidate_caches(self) -> None:
        """Part of the finder protocol; there is nothing cached here."""


class HookedLoader:
    """Wraps a real loader so patches run around the target module's body.

    The real loader is handed back to ``module.__loader__`` and ``__spec__.loader``
    before the body runs, so the module, ``importlib.resources`` and ``pkgutil``
    never see this wrapper.
    """

    def __init__(self, loader: object, name: str, watcher: Watcher) -> None:
        self.loader = loader
        self.name = name
        self.watcher = watcher

    def __getattr__(self, attr: str) -> object:
        return getattr(self.loader, attr)

    def create_module(self, spec: object) -> object:
        create = getattr(self.loader, "create_module", None)
        return None if create is None else create(spec)

    def exec_module(self, module: object) -> None:
        try:
            module.__loader__ = self.loader  # type: ignore[attr-defined]
            spec = getattr(module, "__spec__", None)
            if spec is not None and spec.loader is self:
                spec.loader = self.loader
        except AttributeError:
            pass
        _notify(self.name, "before", module)
        try:
            self.loader.exec_module(module)  # type: ignore[attr-defined]
        except BaseException as exc:
            _notify(self.name, "error", module, exc)
            raise
        _notify(self.name, "after", module)
        self.watcher.done(self.name)


STATE: dict[str, object] = {}
"""Per-process bootstrap state: ``toggles``, ``watcher``, ``origin``, ``problem``."""


def _notify(name: str, phase: str, module: object, exc: "BaseException | None" = None) -> None:
    """Hand one loader event to the engine, importing it on first use.

    ImportError raised on purpose (strict mode, a failed ``required`` patch) is what the
    user asked for and propagates; any other failure of ours is reported and swallowed
    so that the target module still imports.
    """
    try:
        from sglang_shims import _engine
    except BaseException as err:  # a half-installed package must not break the import
        _complain_once(f"cannot load the patch engine ({type(err).__name__}: {err})")
        return
    try:
        _engine.on_loader_event(name, phase, module, exc)
    except ImportError:
        raise
    except BaseException as err:
        _complain_once(f"internal error while handling {name} ({type(err).__name__}: {err})")


def _complain_once(message: str) -> None:
    if STATE.get("complained"):
        return
    STATE["complained"] = True
    try:
        sys.stderr.write(f"sglang-shims: {message}; patches are not applied in this process."
                         " Reinstall with `pip install --force-reinstall sglang-shims`,"
                         " or set SGLANG_SHIMS=0 to silence this.\n")
    except BaseException:
        pass


def watched_modules(toggles: Toggles) -> "dict[str, list[str]]":
    """Module name -> ids of the enabled built-in patches it triggers.

    In strict mode a disabled ``required`` patch is watched too: importing its target
    must then fail loudly instead of running without it.
    """
    out: dict[str, list[str]] = {}
    for patch_id, (module, default, required) in PATCHES.items():
        if toggles.decide(patch_id, default)[0] or (toggles.strict and required):
            out.setdefault(module, []).append(patch_id)
    return out


def activate(origin: str = "pth") -> None:
    """Install the watcher for the enabled patches; never raises."""
    if STATE.get("origin"):
        return
    try:
        if globally_off():
            STATE["origin"] = origin
            return
        toggles = Toggles()
        STATE["toggles"] = toggles
        STATE["origin"] = origin
        names = set(watched_modules(toggles))
        if env("SGLANG_SHIMS_PATH"):
            # Extra patch folders can target any module: their manifests must be read now.
            from sglang_shims import _engine

            names |= _engine.extra_watch_names()
        if names:
            watcher = Watcher(names)
            STATE["watcher"] = watcher
            sys.meta_path.insert(0, watcher)
    except BaseException as exc:
        STATE["problem"] = f"{type(exc).__name__}: {exc}"
        _complain_later(str(STATE["problem"]))


def start() -> None:
    """Entry point of ``sglang_shims.start`` (PEP 829)."""
    activate("start")


def _complain_later(problem: str) -> None:
    """Install a finder that reports a start-up problem when sglang is first imported."""

    roots = {entry[0].partition(".")[0] for entry in PATCHES.values()}

    class Complainer:
        def find_spec(self, fullname: str, path: object = None, target: object = None) -> None:
            if fullname in roots:
                _complain_once(f"start-up hook failed ({problem})")
                try:
                    sys.meta_path.remove(self)
                except ValueError:
                    pass

    try:
        sys.meta_path.insert(0, Complainer())
    except BaseException:
        pass
