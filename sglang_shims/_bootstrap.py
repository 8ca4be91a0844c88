"""The only code of sglang-shims that runs in every Python process.

``sglang_shims.pth`` (Python <= 3.14) imports this module and calls :func:`activate`;
``sglang_shims.start`` (PEP 829, Python >= 3.15) calls :func:`start`.  Everything here
runs during ``site`` initialisation of *every* interpreter in the environment -- pip,
build back-ends, spawn workers -- so it obeys three rules:

* It imports nothing.  ``sys`` and ``os`` are loaded before ``site`` runs; anything else
  (``threading``, ``typing``, ``importlib.metadata``) would cost milliseconds on every start.
* It never raises.  A failure is remembered and reported once, on stderr, when a module
  we watch is first imported -- the only moment it matters.
* It wakes the real engine (``sglang_shims.engine``) only when a watched module is being executed,
  from the loader, never from ``find_spec``: importing from inside ``find_spec`` holds the
  global import lock while taking module locks, the A-B deadlock ddtrace hit (#17742).

The watch table below is generated from the manifests under ``patches/``
(``python -m sglang_shims.catalog.codegen --write``); a test fails when it is stale.
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
# patch id -> (module whose import triggers it, on by default, policy is required,
#              stands in for the module)
PATCHES: dict[str, tuple[str, bool, bool, bool]] = {
    "alloc-conf-env-mirror": ("sglang", True, False, False),
    "file-uri-media": ("sglang.srt.utils", True, False, False),
    "gemma-norm-fp32-plus-one": ("sglang.srt.models.gemma", False, False, False),
    "gemma3-rope-factor-missing": ("sglang.srt.models.gemma3_causal", True, False, False),
    "kernels-revision-required": ("kernels", True, False, False),
    "output-ids-prompt-tail": ("sglang.srt.managers.detokenizer_manager", True, False, False),
    "sgl-kernel-cuda-runtime-preload": ("sgl_kernel", True, False, False),
    "sgl-kernel-dist-renamed": ("sglang.srt.entrypoints.engine", True, False, False),
    "sgl-kernel-fused-marlin-moe": ("sgl_kernel", True, False, False),
    "sgl-kernel-triton-fallback": ("sgl_kernel", True, False, True),
    "sm120-triton-attention-tiles": ("sglang.srt.utils", True, False, False),
    "sm120-trtllm-backend-autoselect": ("sglang.srt.server_args", True, False, False),
    "tf-config-register-collision": ("sglang.srt.configs.qwen3_asr", True, False, False),
    "tf5-attn-mask-utils-removed": ("sglang.srt.models.clip", True, False, False),
    "tf5-chat-template-return-dict": (
        "sglang.srt.entrypoints.openai.serving_chat",
        True, False, False,
    ),
    "tf5-config-dataclass-defaults": ("sglang.srt.models.vila", True, False, False),
    "tf5-gemma3-rope": ("sglang.srt.models.gemma3_causal", True, False, False),
    "tf5-gemma3n-rope": ("sglang.srt.models.gemma3n_causal", True, False, False),
    "tf5-gemma3n-tie-weights": ("sglang.srt.models.gemma3n_mm", True, False, False),
    "tf5-gpt2-bytes-to-unicode": (
        "transformers.models.gpt2.tokenization_gpt2",
        True, False, False,
    ),
    "tf5-image-processor-register": ("sglang.srt.configs.utils", True, False, False),
    "tf5-pixtral-rope-renamed": (
        "transformers.models.pixtral.modeling_pixtral",
        True, False, False,
    ),
    "tf5-rope-theta-moved": ("sglang.srt.utils", True, False, False),
    "tf5-vision-rope-renamed": (
        "transformers.models.qwen2_5_vl.modeling_qwen2_5_vl",
        True, False, False,
    ),
    "tf54-config-bare-annotations": ("sglang.srt.configs", True, False, False),
    "torch-amx-probe-removed": ("sglang.srt.utils", True, False, False),
    "triton-cache-helpers-removed": ("sglang.srt.utils", True, False, False),
    "triton-ptxas-blackwell": ("sglang", True, False, False),
}
# END GENERATED WATCH TABLE

OFF = frozenset({"0", "false", "off", "no"})


def env(name: str, environ: "dict[str, str] | os._Environ[str] | None" = None) -> "str | None":
    """Return a stripped environment value; an empty value means unset."""
    value = (os.environ if environ is None else environ).get(name)
    if value is None:
        return None
    value = value.strip()
    return value or None


def globally_off(environ: "dict[str, str] | os._Environ[str] | None" = None) -> bool:
    """``SGLANG_SHIMS=0`` (or false/off/no): the kill switch, checked before anything else."""
    value = env("SGLANG_SHIMS", environ)
    return value is not None and value.lower() in OFF


class Watcher:
    """A ``sys.meta_path`` finder that answers only for the module names it watches.

    For a watched name it asks the *other* finders on ``sys.meta_path`` for the spec
    (an editable sglang is served by setuptools' finder, not ``PathFinder``) and
    wraps the loader it gets; for every other name it costs one set lookup.
    """

    def __init__(self, names: "set[str]", stand_ins: "set[str] | None" = None) -> None:
        self.names = set(names)
        # Watched names an enabled patch can stand in for when nothing else provides them.
        self.stand_ins = set(stand_ins or ())
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
        if spec is None and fullname in self.stand_ins and path is None:
            # Not installed: offer a package whose body raises the usual
            # ModuleNotFoundError unless the engine decides to stand in for it.  The
            # ModuleSpec class is reached through sys's own spec: no import here.
            spec_class = type(sys.__spec__)
            spec = spec_class(fullname, Missing(fullname),  # type: ignore[arg-type]
                              is_package=True)
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


class Missing:
    """Loader of a module that no finder has: its body is the stock import error."""

    def __init__(self, name: str) -> None:
        self.name = name

    def create_module(self, spec: object) -> None:
        return None

    def exec_module(self, module: object) -> None:
        raise ModuleNotFoundError(f"No module named {self.name!r}", name=self.name)


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
        if _notify(self.name, "before", module) == "instead":
            # an enabled patch stands in for this module (the real one cannot serve)
            _notify(self.name, "instead", module)
        else:
            try:
                self.loader.exec_module(module)  # type: ignore[attr-defined]
            except BaseException as exc:
                if _notify(self.name, "error", module, exc) != "instead":
                    raise
        _notify(self.name, "after", module)
        self.watcher.done(self.name)


STATE: dict[str, object] = {}
"""Per-process bootstrap state: ``toggles``, ``watcher``, ``origin``, ``problem``."""


def _notify(name: str, phase: str, module: object,
            exc: "BaseException | None" = None) -> "str | None":
    """Hand one loader event to the engine, importing it on first use.

    The engine may answer ``"instead"`` (a patch stands in for the module).
    ImportError raised on purpose (strict mode, a failed ``required`` patch) is what the
    user asked for and propagates; any other failure of ours is reported and swallowed
    so that the target module still imports.
    """
    try:
        from . import engine as _engine
    except BaseException as err:  # a half-installed package must not break the import
        _complain_once(f"cannot load the patch engine ({type(err).__name__}: {err})")
        return None
    try:
        answer: str | None = _engine.on_loader_event(name, phase, module, exc)
        return answer
    except ImportError:
        raise
    except BaseException as err:
        _complain_once(f"internal error while handling {name} ({type(err).__name__}: {err})")
        return None


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


def activate(origin: str = "pth") -> None:
    """Install the watcher for the enabled patches; never raises."""
    if STATE.get("origin"):
        return
    STATE["origin"] = origin
    try:
        if globally_off():
            return
        if any(name.startswith("SGLANG_SHIMS_") for name in os.environ):
            # Only users who set a toggle pay for parsing them.
            from . import _toggles

            toggles = _toggles.Toggles()
            STATE["toggles"] = toggles
            enabled = set(_toggles.watched_patches(toggles))
        else:
            enabled = {pid for pid, entry in PATCHES.items() if entry[1]}
        names = {PATCHES[pid][0] for pid in enabled}
        stand_ins = {PATCHES[pid][0] for pid in enabled if PATCHES[pid][3]}
        if env("SGLANG_SHIMS_PATH"):
            # Extra patch folders can target any module: their manifests must be read now.
            from . import engine as _engine

            names |= _engine.extra_watch_names()
        watch(names, stand_ins)
    except BaseException as exc:
        STATE["problem"] = f"{type(exc).__name__}: {exc}"
        _complain_later(str(STATE["problem"]))


def watch(names: "set[str]", stand_ins: "set[str] | None" = None) -> None:
    """Watch more module names, (re)installing the single watcher if needed."""
    watcher = STATE.get("watcher")
    if not isinstance(watcher, Watcher):
        watcher = Watcher(set())
        STATE["watcher"] = watcher
    watcher.names |= names
    watcher.stand_ins |= stand_ins or set()
    if watcher.names and watcher not in sys.meta_path:
        sys.meta_path.insert(0, watcher)


def start() -> None:
    """Entry point of ``sglang_shims.start`` (PEP 829)."""
    activate("start")


def _complain_later(problem: str) -> None:
    """Report a start-up failure once, when a watched package is first imported."""
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
