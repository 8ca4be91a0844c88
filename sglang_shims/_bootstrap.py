"""Start-up code of sglang-shims: the watch table, the finder, the loader wrapper.

Every interpreter of the environment processes ``sglang_shims.pth``, whose line imports
``_sglang_shims_start`` (a top-level module beside it, not part of this package): it puts a
first-stage finder on ``sys.meta_path`` that looks at the top-level name of each import.
Only when one of the packages our patches target is imported (``sglang``, ``sgl_kernel``,
``transformers``, ``kernels``), or any module at all when ``SGLANG_SHIMS_PATH`` is set, does
it load this module and call :func:`activate`, which puts the real :class:`Watcher` in its
place.  The launcher's ``sitecustomize`` and sglang's plugin hook call :func:`activate`
directly.  Everything here obeys three rules:

* It imports nothing but ``sys`` and ``os`` (loaded before ``site`` runs) and, only when a
  ``SGLANG_SHIMS_*`` variable is set, its sibling ``_toggles``.  :func:`activate` can run
  inside a finder's ``find_spec``, where the global import lock is held, so siblings are
  loaded with :func:`load_sibling`, which takes no import lock.
* It never raises.  A failure is remembered and reported once, on stderr, when a module
  we watch is first imported -- the only moment it matters.
* It wakes the real engine (:data:`LISTENER`) only when a watched module is being executed,
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
    from collections.abc import Callable, Sequence
    from importlib.machinery import ModuleSpec
    from types import ModuleType

# BEGIN GENERATED WATCH TABLE
# patch id -> the module whose import triggers it
TARGETS = {
    "alloc-conf-env-mirror": "sglang",
    "deep-gemm-standin": "deep_gemm",
    "deepgemm-compile-mode-missing": "sglang.srt.layers.deep_gemm_wrapper.compile_utils",
    "file-uri-media": "sglang.srt.utils",
    "flashinfer-availability-unchecked": "sglang.srt.utils",
    "flashinfer-jit-norm-fallback": "sglang.srt.layers.layernorm",
    "gemma-norm-fp32-plus-one": "sglang.srt.models.gemma",
    "gemma3-rope-factor-missing": "sglang.srt.models.gemma3_causal",
    "hf3fs-client-source-missing": "sglang.srt.mem_cache.storage.hf3fs.client_hf3fs",
    "kernels-revision-required": "kernels",
    "outlines-json-schema-moved": "sglang.srt.constrained.outlines_backend",
    "outlines-pyairports-removed": "outlines.types.airports",
    "output-ids-prompt-tail": "sglang.srt.managers.detokenizer_manager",
    "sgl-kernel-cuda-runtime-preload": "sgl_kernel",
    "sgl-kernel-dist-renamed": "sglang.srt.entrypoints.engine",
    "sgl-kernel-fused-marlin-moe": "sgl_kernel",
    "sgl-kernel-missing-symbols": "sgl_kernel",
    "sgl-kernel-triton-fallback": "sgl_kernel",
    "sglang-jit-activation-fallback": "sglang.jit_kernel.activation",
    "sglang-jit-rope-fallback": "sglang.jit_kernel.rope",
    "sglang-kernels-activation-fallback": "sglang.kernels.ops.activation.activation",
    "sglang-kernels-rope-fallback": "sglang.kernels.ops.attention.rope",
    "sm120-triton-attention-tiles": "sglang.srt.utils",
    "sm120-trtllm-backend-autoselect": "sglang.srt.server_args",
    "tf-config-register-collision": "sglang.srt.configs.qwen3_asr",
    "tf448-llama-flash-attention2-removed": "transformers.models.llama.modeling_llama",
    "tf449-mllama-valid-images-removed": "sglang.srt.configs.qwen2_5_vl_config",
    "tf449-qwen2-5-vl-register-collision": "sglang.srt.configs.qwen2_5_vl_config",
    "tf452-video-input-moved": "sglang.srt.configs.qwen2_5_vl_config",
    "tf5-attn-mask-utils-removed": "sglang.srt.models.clip",
    "tf5-chat-template-return-dict": "sglang.srt.entrypoints.openai.serving_chat",
    "tf5-config-dataclass-defaults": "sglang.srt.models.vila",
    "tf5-gemma3-rope": "sglang.srt.models.gemma3_causal",
    "tf5-gemma3n-rope": "sglang.srt.models.gemma3n_causal",
    "tf5-gemma3n-tie-weights": "sglang.srt.models.gemma3n_mm",
    "tf5-gpt2-bytes-to-unicode": "transformers.models.gpt2.tokenization_gpt2",
    "tf5-image-processor-register": "sglang.srt.configs.utils",
    "tf5-pixtral-rope-renamed": "transformers.models.pixtral.modeling_pixtral",
    "tf5-rope-theta-moved": "sglang.srt.utils",
    "tf5-vision-rope-renamed": "transformers.models.qwen2_5_vl.modeling_qwen2_5_vl",
    "tf54-config-bare-annotations": "sglang.srt.configs",
    "tf54-qwen3-5-moe-subconfig-dicts": "sglang.srt.configs.qwen3_5",
    "tilelang-fast-math-key-removed": "sglang.srt.layers.attention.nsa.tilelang_kernel",
    "torch-amx-probe-removed": "sglang.srt.utils",
    "triton-cache-helpers-removed": "sglang.srt.utils",
    "triton-ptxas-blackwell": "sglang",
    "vllm-custom-ops-standin": "vllm._custom_ops",
    "vllm-triton-cache-helpers-removed": "vllm.triton_utils.custom_cache_manager",
    "xgrammar-ffi-int-token-ids": "sglang.srt.constrained.xgrammar_backend",
}
# on only when a toggle turns them on
OFF_BY_DEFAULT = frozenset({"gemma-norm-fp32-plus-one"})
# policy = "required": a failure stops the import
REQUIRED: frozenset[str] = frozenset()
# may stand in for their whole target module
STAND_INS = frozenset({
    "deep-gemm-standin",
    "hf3fs-client-source-missing",
    "outlines-pyairports-removed",
    "sgl-kernel-triton-fallback",
})
# stand-in patch id -> (target, its version gates): checked by the finder
# before it offers a module that is not installed (Watcher.admits)
STAND_IN_GATES = {
    "deep-gemm-standin": ("deep_gemm", (("sglang", ">=0.4.4,<0.4.6.post5"),)),
    "hf3fs-client-source-missing": ("sglang.srt.mem_cache.storage.hf3fs.client_hf3fs", (
        ("sglang", ">=0.4.10,<0.4.10.post2"),
    )),
    "outlines-pyairports-removed": ("outlines.types.airports", (
        ("sglang", "<0.4.2.post4"),
        ("outlines", ">=0.0.43,<0.1.0"),
    )),
    "sgl-kernel-triton-fallback": ("sgl_kernel", (("sglang", ">=0.4.1,<0.5.24"), ("torch", ""))),
}
# END GENERATED WATCH TABLE

OFF = frozenset({"0", "false", "off", "no"})
LISTENER = "sglang_shims.engine.process:on_loader_event"
"""``module:function`` that receives every loader event (``BOOT, name, phase, module, exc``).

Named, not imported: this module must not import the engine, and a test may point it at
a recorder."""
PTH_MARK = "sglang_shims_pth"
"""Attribute of ``_sglang_shims_start``'s first-stage finder, so that it can be recognised
(that module cannot import this one: it holds the same name)."""
FINDER_MARK = "_sglang_shims_finder"
"""Class attribute (``True``) of our own ``sys.meta_path`` finders (:class:`Watcher` and the
start-up failure's complainer): code that asks the finders where a module lives skips them."""


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


class Boot:
    """What the start-up hook knows, handed to the engine as one typed object.

    ``origin`` says who activated (``pth``, ``launch-site``, ``plugin``, ``install``);
    ``toggles`` is the parsed ``_toggles.Toggles`` when a variable was set; ``problem`` is
    why start-up failed; ``woke`` and ``woke_cpu`` are
    ``time.perf_counter()`` and ``time.thread_time()`` at the first loader event, the start
    of the engine's wake-up timing (wall and CPU time of the importing thread).
    """

    __slots__ = ("complained", "origin", "problem", "toggles", "watcher", "woke", "woke_cpu")

    def __init__(self) -> None:
        self.origin: str | None = None
        self.toggles: object = None
        self.watcher: Watcher | None = None
        self.problem: str | None = None
        self.complained = False
        self.woke: float | None = None
        self.woke_cpu = 0.0


BOOT = Boot()


class Watcher:
    """A ``sys.meta_path`` finder that answers only for the module names it watches.

    For a watched name it asks the *other* finders on ``sys.meta_path`` for the spec
    (an editable sglang is served by setuptools' finder, not ``PathFinder``) and
    wraps the loader it gets; for every other name it costs one set lookup.

    Where no finder has the module it answers as stock Python does (``None``), unless
    an enabled stand-in patch for that name passes its version gates: only then is a
    spec offered, so ``find_spec`` probes and ``import`` agree with each other and with a
    process without the shims.  The gates are read from the installed distributions'
    ``.dist-info`` folder names (``_versions.gates_pass``): importing
    ``importlib.metadata`` or ``packaging`` here would break the deadlock rule above.
    """

    _sglang_shims_finder = True  # FINDER_MARK

    def __init__(self, names: "set[str]", stand_ins: "set[str] | None" = None) -> None:
        self.names = set(names)
        # Watched names an enabled patch can stand in for when nothing else provides them.
        self.stand_ins = set(stand_ins or ())
        self._finding: set[str] = set()
        self._admitted: dict[str, bool] = {}

    def find_spec(self, fullname: str, path: "Sequence[str] | None" = None,
                  target: "ModuleType | None" = None) -> "ModuleSpec | None":
        if fullname not in self.names or fullname in self._finding:
            return None
        # The caller holds the import lock for this name, so one guard per name suffices.
        self._finding.add(fullname)
        try:
            spec: ModuleSpec | None = None
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
        if spec is None:
            if path is None and fullname in self.stand_ins and self.admits(fullname):
                # Not installed, and a stand-in passed its gates: a package whose body is
                # the stock ModuleNotFoundError unless the engine stands in for it.  The
                # ModuleSpec class is reached through sys's own spec: no import here.
                spec_class = type(sys.__spec__)
                missing = HookedLoader(Missing(fullname), fullname, self)
                offered: ModuleSpec = spec_class(fullname, missing,  # type: ignore[arg-type]
                                                 is_package=True)
                return offered
            return None
        loader = spec.loader
        if loader is None and spec.submodule_search_locations is not None:
            # A folder without __init__.py (a namespace package, e.g. what a broken
            # uninstall leaves): hook the namespace loader the import system would make.
            namespace = namespace_loader(spec.submodule_search_locations)
            if namespace is not None:
                spec.loader = HookedLoader(namespace, fullname, self, is_namespace=True)  # type: ignore[assignment]
        elif loader is not None and hasattr(loader, "exec_module"):
            spec.loader = HookedLoader(loader, fullname, self)  # type: ignore[assignment]
        return spec

    def admits(self, fullname: str) -> bool:
        """Does an enabled stand-in patch for ``fullname`` pass its version gates here?"""
        if fullname not in self._admitted:
            gates = [g for target, g in STAND_IN_GATES.values() if target == fullname]
            admitted = False
            try:
                if gates:  # the version reader is loaded only now: most processes never ask
                    versions = load_sibling("_versions")
                    admitted = any(versions.gates_pass(g) for g in gates)
            except Exception as err:  # a damaged install: the stock answer, said once
                _complain_once(f"cannot read the installed versions ({type(err).__name__}:"
                               f" {err})")
            self._admitted[fullname] = admitted
        return self._admitted[fullname]

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
        """Part of the finder protocol: forget the stand-in decisions (a package may
        have been installed since)."""
        self._admitted.clear()


def namespace_loader(locations: object) -> object:
    """The loader the import system gives a namespace package (``_init_module_attrs``
    builds the same one when ``spec.loader`` is None); None if this Python has none."""
    external = sys.modules.get("_frozen_importlib_external")
    cls = getattr(external, "NamespaceLoader", None) or getattr(external, "_NamespaceLoader", None)
    if cls is None:
        return None
    loader = cls.__new__(cls)
    loader._path = locations
    return loader


class Missing:
    """Loader of a module that no finder has: its body is the stock import error.

    Offered only where a stand-in patch passed its gates; if the engine then decides not
    to stand in after all, the import fails exactly as without the shims.
    """

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
    never see this wrapper.  A namespace package gets the attributes the import
    system gives one (``__file__`` None, its ``NamespaceLoader``).
    """

    def __init__(self, loader: object, name: str, watcher: Watcher,
                 is_namespace: bool = False) -> None:
        self.loader = loader
        self.name = name
        self.watcher = watcher
        self.is_namespace = is_namespace

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
            if self.is_namespace:
                module.__file__ = None  # type: ignore[attr-defined]
        except AttributeError:
            pass
        if _notify(self.name, "before", module) == "instead":
            # an enabled patch stands in for this module (the real one cannot serve)
            _notify(self.name, "instead", module)
        else:
            try:
                self.loader.exec_module(module)  # type: ignore[attr-defined]
            except Exception as exc:  # Ctrl-C and SystemExit leave as they came: stock
                if _notify(self.name, "error", module, exc) != "instead":
                    raise
        _notify(self.name, "after", module)
        self.watcher.done(self.name)


def _notify(name: str, phase: str, module: object,
            exc: "BaseException | None" = None) -> "str | None":
    """Hand one loader event to the engine (:data:`LISTENER`), importing it on first use.

    The engine may answer ``"instead"`` (a patch stands in for the module).
    ImportError raised on purpose (strict mode, a failed ``required`` patch) is what the
    user asked for and propagates; any other failure of ours is reported and swallowed
    so that the target module still imports.
    """
    if BOOT.woke is None:
        import time  # built into the interpreter: no file is read

        BOOT.woke, BOOT.woke_cpu = time.perf_counter(), time.thread_time()
    try:
        module_name, _, attr = LISTENER.partition(":")
        __import__(module_name)
        listener: Callable[..., str | None] = getattr(sys.modules[module_name], attr)
    except Exception as err:  # a half-installed package must not break the import
        _complain_once(f"cannot load the patch engine ({type(err).__name__}: {err})")
        return None
    try:
        return listener(BOOT, name, phase, module, exc)
    except ImportError:
        raise
    except Exception as err:
        # Ctrl-C, SystemExit and the other BaseExceptions are not ours to swallow: a
        # signal stops the program as it would without us (the engine has rolled back)
        _complain_once(f"internal error while handling {name} ({type(err).__name__}: {err})")
        return None


def _source_checkout() -> bool:
    """Is this package run from a source checkout (``patches/`` and ``.git`` beside it)?"""
    top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return os.path.isdir(os.path.join(top, "patches")) and os.path.exists(
        os.path.join(top, ".git"))


def remedy() -> str:
    """What to do about a damaged install: a command for developers only in a checkout."""
    if _source_checkout():
        return ("in this source checkout, run `python -m sglang_shims.catalog.codegen --write`"
                " and `pip install -e .`")
    return ("reinstall it with `pip install --force-reinstall sglang-shims`, or set"
            " SGLANG_SHIMS=0 to run without it")


def _complain_once(message: str) -> None:
    if BOOT.complained:
        return
    BOOT.complained = True
    try:
        sys.stderr.write(f"sglang-shims: {message}; patches are not applied in this process."
                         f" To fix it, {remedy()}.\n")
    except BaseException:
        pass


def load_sibling(name: str) -> "ModuleType":
    """Load ``sglang_shims.<name>`` from this folder without the import system's locks.

    :func:`activate` may run inside a finder's ``find_spec`` (the ``.pth`` line's first
    stage wakes it there), where the global import lock is held; importing through the
    import system from there can deadlock against a thread that holds one of our module
    locks.  A module already imported is returned as it is.
    """
    full = f"sglang_shims.{name}"
    loaded = sys.modules.get(full)
    if loaded is not None:
        return loaded
    external = sys.modules["_frozen_importlib_external"]
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), f"{name}.py")
    loader = external.SourceFileLoader(full, path)
    spec = external.spec_from_file_location(full, path, loader=loader)
    module: ModuleType = sys.modules["_frozen_importlib"].module_from_spec(spec)
    sys.modules[full] = module
    try:
        loader.exec_module(module)
    except BaseException:
        sys.modules.pop(full, None)
        raise
    parent = sys.modules.get("sglang_shims")
    if parent is not None:
        setattr(parent, name, module)  # what the import system does for a submodule
    return module


EXTRA_HEAD = 1 << 16
"""How much of an extra manifest start-up reads to find its ``[target]`` (the loader
refuses a manifest whose target lies further in, so that nothing is silently missed)."""


def extra_targets(value: str, limit: int = EXTRA_HEAD) -> "set[str]":
    """Modules targeted by the manifests in ``SGLANG_SHIMS_PATH`` folders, read cheaply.

    Only the ``[target]`` module line of each ``<folder>/<id>/manifest.toml`` is read (a
    regular file, at most ``limit`` bytes, no link followed, never blocking): enough to know
    which imports must wake the engine, which then vets the folders and parses the
    manifests (a refused folder is reported then).  Relative entries are skipped here as
    there.  The three TOML spellings are understood: a ``[target]`` table,
    ``target.module = ...`` and ``target = {module = ...}``.
    """
    found: set[str] = set()
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    for entry in value.split(os.pathsep):
        root = entry.strip()
        if not os.path.isabs(root):
            continue
        try:
            names = sorted(os.listdir(root))
        except OSError:
            continue
        for name in names:
            try:
                fd = os.open(os.path.join(root, name, "manifest.toml"), flags)
            except OSError:
                continue
            try:
                if (os.fstat(fd).st_mode & 0o170000) != 0o100000:  # not a regular file
                    continue
                text = os.read(fd, limit).decode("utf-8", "replace")
            except OSError:
                continue
            finally:
                os.close(fd)
            module = _target_of(text)
            if module and not engine_runs_on(module):
                found.add(module)
    return found


ENGINE_DEPENDENCIES = ("packaging", "wrapt", "tomli", "importlib_resources", "sglang_shims")
"""What the engine itself imports beyond the standard library."""


def engine_runs_on(module: str) -> bool:
    """Whether ``module`` is one the engine may import while it wakes: the standard library
    and :data:`ENGINE_DEPENDENCIES`.  A patch from ``SGLANG_SHIMS_PATH`` may not target
    one: its first import would wake the engine while its own body is half run, and the
    engine's import of it would then fail inside the user's import.  Such targets are not
    watched, and the loader refuses the manifest with this reason."""
    root = module.partition(".")[0]
    return root in ENGINE_DEPENDENCIES or root in getattr(sys, "stdlib_module_names", ())


def _target_of(text: str) -> "str | None":
    """The ``[target] module`` value of a manifest's text, or None."""
    in_target = False
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("["):
            in_target = line.replace(" ", "") == "[target]"
            continue
        key, sep, value = line.partition("=")
        key = key.strip()
        if not sep:
            continue
        if key == "target" and value.strip().startswith("{"):
            key, sep, value = value.strip()[1:].partition("module")
            value = value.partition("=")[2]
        elif not ((in_target and key == "module") or key == "target.module"):
            continue
        value = value.strip()
        if value[:1] in ("'", '"'):
            return value[1:value.find(value[0], 1)] or None
    return None


def _watch_set() -> "tuple[set[str], set[str]]":
    """The module names to watch and those an enabled patch may stand in for."""
    if any(name.startswith("SGLANG_SHIMS_") for name in os.environ):
        # Only users who set a toggle pay for parsing them.
        toggles_module = load_sibling("_toggles")
        BOOT.toggles = toggles_module.Toggles()
        enabled = set(toggles_module.watched_patches(BOOT.toggles))
    else:
        enabled = {pid for pid in TARGETS if pid not in OFF_BY_DEFAULT}
    names = {TARGETS[pid] for pid in enabled}
    stand_ins = {TARGETS[pid] for pid in enabled & STAND_INS}
    extra = env("SGLANG_SHIMS_PATH")
    if extra:
        # Extra patch folders can target any module; only their target lines are read now.
        names |= extra_targets(extra)
    return names, stand_ins


def activate(origin: str = "pth") -> None:
    """Install the watcher for the enabled patches; never raises."""
    if BOOT.origin:
        return
    BOOT.origin = origin
    try:
        if globally_off():
            return
        watch(*_watch_set())
    except BaseException as exc:
        BOOT.problem = f"{type(exc).__name__}: {exc}"
        _complain_later(BOOT.problem)


def active() -> "str | None":
    """Who activated the shims in this process (None: nobody yet, nor will the .pth)."""
    if BOOT.origin:
        return BOOT.origin
    if any(getattr(finder, PTH_MARK, False) for finder in sys.meta_path):
        return "pth"  # the .pth line's first stage waits for a watched package
    return None


def watch(names: "set[str]", stand_ins: "set[str] | None" = None) -> None:
    """Watch more module names, (re)installing the single watcher if needed."""
    watcher = BOOT.watcher
    if watcher is None:
        watcher = BOOT.watcher = Watcher(set())
    watcher.names |= names
    watcher.stand_ins |= stand_ins or set()
    if watcher.names and watcher not in sys.meta_path:
        sys.meta_path.insert(0, watcher)


def _complain_later(problem: str) -> None:
    """Report a start-up failure once, when a watched package is first imported."""
    roots = {target.partition(".")[0] for target in TARGETS.values()}

    class Complainer:
        _sglang_shims_finder = True  # FINDER_MARK

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
