"""The engine in the test's own process: a real :class:`~sglang_shims.engine.core.Engine`,
fed the loader events an import would feed it, with nothing left behind.

A fresh interpreter per case costs a quarter of a second or more; what most patch and
engine tests ask -- what did the engine decide, what did the patch change, what does
``status()`` say -- needs none of what only a fresh interpreter has (the ``.pth`` line,
our finder on ``sys.meta_path``, fork, ``atexit``).  So this module builds the engine
the way :func:`sglang_shims.engine.process.get` does, minus what belongs to a process
(log handler, report, exit and fork hooks), and drives it through its one seam,
:meth:`Engine.on_event`, exactly as :class:`sglang_shims._bootstrap.HookedLoader` does:

* :func:`fire` delivers one event and treats what comes back as ``_bootstrap._notify``
  does (an ImportError and Ctrl-C pass, any other error of ours is said and swallowed);
* :func:`execute` runs a module's body between the events, in the loader's order:
  ``before``, then ``instead`` if a patch stands in, else the body and ``error`` if it
  raised, then ``after``; the module sits in ``sys.modules`` meanwhile, marked as being
  initialised, as the import system leaves it;
* :func:`target_module` makes the module: its source in a file (fingerprints read it),
  ``__spec__``, ``__file__`` and ``__loader__`` set by a real ``SourceFileLoader``;
* :class:`Isolation` gives back what a test changed: the applied patches are reverted,
  ``sys.modules`` entries for targets and for patch code are restored.

The process's own engine (:func:`~sglang_shims.engine.process.get`) is never built or
touched.  :func:`sglang_shims.testing.pytest_plugin.shim_patch` is the fixture over this.
"""

from __future__ import annotations

import importlib.util
import logging
import sys
import textwrap
import weakref
from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType

from .. import _bootstrap, _toggles
from ..catalog import load
from ..catalog.validate import load_text
from ..engine.core import Engine
from ..engine.gates import Environment
from ..engine.record import Record

PATCH_CODE = "sglang_shims.patches."
"""Prefix under which :func:`sglang_shims.catalog.load.load_code` registers patch code."""

_complaints: weakref.WeakKeyDictionary[Engine, list[str]] = weakref.WeakKeyDictionary()


class _Lines(logging.Handler):
    """Keeps each record as ``LEVEL message``: what the process's stderr would show."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.setFormatter(logging.Formatter("%(levelname)s %(message)s"))  # with tracebacks
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


def build(catalog: load.Catalog, environ: Mapping[str, str] | None = None,
          versions: Mapping[str, str | None] | None = None,
          gpus: list[tuple[int, int]] | None = None) -> Engine:
    """An engine over ``catalog`` as a process would build it, with the toggles of
    ``environ`` (only those: the test's own environment is not read), ``versions`` on top
    of what is installed here, and ``gpus`` (None: detected, as in a process).

    It logs at debug level into a logger of its own (:func:`logged`), not registered with
    :mod:`logging`, so nothing of it outlives the engine.
    """
    boot = _bootstrap.Boot()
    boot.origin = "test"
    toggles = _toggles.Toggles(dict(environ or {}))
    log = logging.Logger("sglang_shims.inprocess", logging.DEBUG)
    log.addHandler(_Lines())
    env = Environment(dict(versions or {}), capabilities=gpus)
    engine = Engine(boot, catalog, toggles, env, log=log)
    engine.announce([])
    return engine


def logged(engine: Engine) -> list[str]:
    """What ``engine`` logged (``LEVEL message`` lines), if :func:`build` built it."""
    return [line for handler in engine.log.handlers if isinstance(handler, _Lines)
            for line in handler.lines]


def complaints(engine: Engine) -> list[str]:
    """The internal errors :func:`fire` said and swallowed, as a process prints them."""
    return _complaints.setdefault(engine, [])


def catalog_of(folder: Path) -> load.Catalog:
    """The catalog holding the one patch in ``folder``, read as a process would read it:
    a built-in folder as built-in, any other as an ``SGLANG_SHIMS_PATH`` entry (its trust
    checks included).  Raises ValueError with the reason when it cannot be loaded."""
    folder = Path(folder).resolve()
    if folder.parent == load.builtin_root().resolve():
        text = (folder / load.MANIFEST).read_text(encoding="utf-8")
        return load.Catalog([load_text(text, str(folder / load.MANIFEST), folder, "builtin")])
    catalog = load.load(str(folder.parent), include_builtin=False)
    if folder.name in catalog.errors:
        raise ValueError(f"patch {folder} cannot be loaded: {catalog.errors[folder.name]}")
    mine = [m for m in catalog.manifests if m.folder is not None and m.folder.name == folder.name]
    if not mine:
        raise ValueError(f"no patch in {folder}: {'; '.join(catalog.warnings) or 'no manifest'}")
    return load.Catalog(mine, warnings=catalog.warnings)


def target_module(name: str, source: str, folder: Path) -> ModuleType:
    """A module ``name`` whose body is ``source``, not yet run: the file is written under
    ``folder`` and the module made from its spec, so ``__spec__``, ``__file__``,
    ``__loader__``, ``__package__`` and ``__cached__`` are what an import would set."""
    path = Path(folder, *name.split(".")).with_suffix(".py")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    return importlib.util.module_from_spec(spec)


def run_body(module: ModuleType) -> None:
    """Run the module's source file in it, as its loader would (no bytecode cache: a test
    may write another body to the same path within the file system's time resolution)."""
    path = module.__file__
    assert path is not None, f"{module.__name__} has no file to run"
    code = compile(Path(path).read_text(encoding="utf-8"), path, "exec")
    exec(code, module.__dict__)


def fire(engine: Engine, module: ModuleType, phase: str, exc: BaseException | None = None,
         name: str | None = None) -> str | None:
    """Deliver one loader event (``before``, ``instead``, ``error``, ``after``) for
    ``module`` (as ``name``, default its ``__name__``), handling the answer as
    ``_bootstrap._notify`` does: ImportError (strict mode, a required patch) and Ctrl-C
    propagate; any other exception is an internal error, said (:func:`complaints`) and
    swallowed, so that the import goes on.  Returns the engine's answer."""
    name = name or module.__name__
    try:
        return engine.on_event(name, phase, module, exc)
    except ImportError:
        raise
    except Exception as err:
        complaints(engine).append(
            f"internal error while handling {name} ({type(err).__name__}: {err})")
        return None


def execute(engine: Engine, module: ModuleType, body: Callable[[ModuleType], None] | None = None,
            name: str | None = None) -> ModuleType:
    """Import ``module`` through ``engine`` as the shims' loader does.

    The module is put in ``sys.modules`` and marked as initialising for the duration (as
    the import system does before a loader runs), then the events go out in
    ``HookedLoader.exec_module``'s order around ``body`` (default :func:`run_body`; pass
    ``lambda m: None`` for a module whose body already ran).  If the import fails the
    entry is taken out of ``sys.modules`` again and the error propagates, as an import's
    would.  The caller restores any earlier entry (:class:`Isolation` does)."""
    name = name or module.__name__
    body = body or run_body
    spec = getattr(module, "__spec__", None)
    sys.modules[name] = module
    if spec is not None:
        spec._initializing = True
    try:
        if fire(engine, module, "before", name=name) == "instead":
            fire(engine, module, "instead", name=name)
        else:
            try:
                body(module)
            except Exception as exc:  # Ctrl-C and SystemExit leave as they came: stock
                if fire(engine, module, "error", exc, name=name) != "instead":
                    raise
        fire(engine, module, "after", name=name)
    except BaseException:
        if sys.modules.get(name) is module:
            del sys.modules[name]
        raise
    finally:
        if spec is not None:
            spec._initializing = False
    return module


class Isolation:
    """What in-process engine tests change in the interpreter, given back at the end.

    Enter before the first engine is built and :meth:`close` after the test:
    every engine handed to :meth:`track` is reverted (its journals undone, newest first:
    a patch that set an environment variable or changed a shared class gives it back);
    the ``sys.modules`` entries of the names in :attr:`names` and of patch code
    (``sglang_shims.patches.*``) are restored to what they were, patch code loaded
    before the test included (taken out now, so that a patch's code is always run
    afresh from its folder).
    """

    def __init__(self) -> None:
        self.names: set[str] = set()
        self.engines: list[Engine] = []
        self._saved = {k: v for k, v in sys.modules.items() if k.startswith(PATCH_CODE)}
        for key in self._saved:
            del sys.modules[key]
        self._before: dict[str, ModuleType | None] = {}

    def claim(self, name: str) -> None:
        """Restore ``sys.modules[name]`` to its present value (or absence) at the end."""
        if name not in self.names:
            self.names.add(name)
            self._before[name] = sys.modules.get(name)

    def track(self, engine: Engine) -> Engine:
        self.engines.append(engine)
        return engine

    def close(self) -> list[str]:
        """Give everything back; returns what went wrong on the way, none expected: the
        internal errors :func:`fire` swallowed, and undo errors."""
        errors = [line for engine in self.engines for line in complaints(engine)]
        for engine in reversed(self.engines):
            errors += engine.revert()
        for name, module in self._before.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module
        for key in [k for k in sys.modules if k.startswith(PATCH_CODE)]:
            del sys.modules[key]
        sys.modules.update(self._saved)
        return errors


def code_module(patch_id: str) -> ModuleType | None:
    """The loaded ``patch.py`` of ``patch_id`` (its module globals: a counter, a seam), if
    an engine ran it."""
    return sys.modules.get(PATCH_CODE + patch_id.replace("-", "_").replace(".", "_"))


class ShimPatch:
    """The ``shim_patch`` fixture: ``shim_patch(folder, module_or_source) -> Record``.

    Applies the one patch in ``folder`` to its target in this process, through a fresh
    engine (:func:`build`) and the loader's events (:func:`execute`), and returns the
    patch's record as ``status()`` would show it.  ``module_or_source``: the target's
    source (dedented, run as the module's body between the events, so ``when = "before"``
    acts before it) or a module object whose body already ran (the events go out around
    nothing).  Either way the module is registered under the manifest's ``[target]``
    name while the test runs; :attr:`module` and :attr:`engine` are those of the last
    call.  ``environ`` holds ``SGLANG_SHIMS_*`` toggles (the test's own environment is not
    read), ``versions`` distribution versions to pretend, ``gpus`` compute capabilities
    (None: detected).  An import the engine stops (strict mode, a required patch) raises
    here as it would there.
    """

    def __init__(self, folder: Path, isolation: Isolation) -> None:
        self.folder = folder
        self.isolation = isolation
        self.module: ModuleType | None = None
        self.engine: Engine | None = None

    def __call__(self, folder: Path | str, module_or_source: ModuleType | str, *,
                 environ: Mapping[str, str] | None = None,
                 versions: Mapping[str, str | None] | None = None,
                 gpus: list[tuple[int, int]] | None = None) -> Record:
        catalog = catalog_of(Path(folder))
        (manifest,) = catalog.manifests
        self.engine = engine = self.isolation.track(build(catalog, environ, versions, gpus))
        self.isolation.claim(manifest.target)
        body: Callable[[ModuleType], None] | None = None
        if isinstance(module_or_source, ModuleType):
            module = module_or_source
            body = _ran_already
        else:
            where = self.folder / f"target-{len(self.isolation.engines)}"
            module = target_module(manifest.target, textwrap.dedent(module_or_source), where)
        self.module = module
        execute(engine, module, body, name=manifest.target)
        return engine.observed()[manifest.id]


def _ran_already(module: ModuleType) -> None:
    """The body of a module given whole: it ran before the test handed it over."""
