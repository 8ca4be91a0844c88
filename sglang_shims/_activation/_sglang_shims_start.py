"""The code sglang-shims runs at the start of every Python process of the environment.

``site`` runs the import line of ``sglang_shims.pth`` in every interpreter (pip, build
back-ends, compiler helpers, each sglang process): ``import _sglang_shims_start``.  The wheel
puts this module beside the ``.pth``, at the top of ``site-packages``, so that start-up never
imports our package; imported under its own name, it calls :func:`start`, which

* returns at once when ``SGLANG_SHIMS`` is 0/false/off/no (:func:`mode`), having imported
  nothing;
* otherwise puts one finder first on ``sys.meta_path`` (:func:`first_stage`) that answers
  ``None`` to every import but the first of a watched root (:data:`ROOTS`, generated from
  the manifests; with ``SGLANG_SHIMS_PATH`` set, whose targets are not known yet, any
  module that ``site`` does not import itself: :func:`wakes`), so every other
  ``find_spec`` answer and traceback stays stock;
* at that import loads ``sglang_shims._bootstrap`` from the folder where ``site`` found the
  package (:func:`load_bootstrap`) and calls its ``activate()``, whose finder takes over;
* never raises: a failure is said once, on stderr, at the first import of a watched root.

Python 3.15+ ignores the ``.pth`` line (PEP 829) and imports this module through
``sglang_shims.start``, whose entry point, :func:`start`, then finds it already started.

What start-up costs, and why the code has this shape (CPython 3.11, instructions executed
by ``python -c pass``, about 35 million; ``benchmarks/README.md``).  A ``.pth`` line is
compiled at every start, and the compiler is slow when cold: the one-line finder this module
replaced cost 3.2 million, a line with any lambda at least 1.2 million, and even
``; _sglang_shims_start.start()`` after the import 0.13 million; this module comes from the
``.pyc`` that the installer wrote.  Any ``.pth`` line costs 0.3 million, importing an empty
module 0.4 million more, and this one 0.36 million beyond that.  So the line is only the
import; the finder is a namespace with a closure, since creating a class costs 0.1 million;
the module imports nothing, not even ``typing``; and its globals hold no module but ``sys``:
the finder lives until the interpreter's very end (the interpreter keeps a copy of
``sys.meta_path``), and a module its functions' globals held (``os``) would be torn down the
slow way at exit, another 0.45 million.  Plain syntax: this environment's Python may be 3.10.
"""

import sys

# ``typing`` is an import; mypy treats any name TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from importlib.machinery import ModuleSpec
    from types import ModuleType
    from types import SimpleNamespace as Namespace
    from typing import Protocol

    class Stage(Protocol):
        """The first-stage finder: a ``SimpleNamespace`` at run time (see :func:`first_stage`)."""

        sglang_shims_pth: bool
        watched: str
        site_path: list[str]
        origin: str
        woke: bool
        problem: str | None
        complained: bool

        def find_spec(self, name: str, path: Sequence[str] | None = None,
                      target: ModuleType | None = None) -> ModuleSpec | None: ...
else:
    Namespace = type(sys.implementation)  # SimpleNamespace, without importing types

# BEGIN GENERATED ROOTS
# the top-level packages that hold a built-in patch's target
ROOTS = ("kernels", "sgl_kernel", "sglang", "transformers")
# END GENERATED ROOTS

OFF = ("0", "false", "off", "no")
PTH_MARK = "sglang_shims_pth"
"""Attribute of the :func:`first_stage` finder (``_bootstrap.PTH_MARK``), by which
``_bootstrap.active()`` tells that sglang-shims will wake in this process."""
PACKAGE = "sglang_shims"
REMEDY = ("reinstall it with `pip install --force-reinstall sglang-shims`, or set"
          " SGLANG_SHIMS=0 to run without it")


def mode(environ: "Mapping[str, str]") -> "str | None":
    """What this process watches: None (``SGLANG_SHIMS`` turns sglang-shims off), ``roots``
    (:data:`ROOTS`), or ``any`` (``SGLANG_SHIMS_PATH`` names extra patch folders, which may
    target any module; an empty value counts as unset, as everywhere in sglang-shims)."""
    if environ.get("SGLANG_SHIMS", "").strip().lower() in OFF:
        return None
    return "any" if environ.get("SGLANG_SHIMS_PATH", "").strip() else "roots"


def wakes(name: str, watched: str) -> bool:
    """Does importing ``name`` wake sglang-shims, under :func:`mode` ``watched``?

    In ``any`` mode, what ``site`` itself imports after the ``.pth`` (``sitecustomize``,
    ``usercustomize``, and built-in modules such as ``pwd``) does not: a process that
    imports nothing else never loads the bootstrap.
    """
    if name in ROOTS:
        return True
    return (watched == "any" and not name.endswith("customize")
            and name not in sys.builtin_module_names)


def first_stage(watched: str, site_path: "list[str]", origin: str) -> "Stage":
    """The ``sys.meta_path`` finder that waits for the first watched import.

    ``site_path`` is ``sys.path`` as ``site`` left it (the current directory comes first
    only later); ``origin`` is what ``activate()`` is told.  The finder costs every other
    import one call and one tuple test.  It stays on ``sys.meta_path`` once it has woken,
    inert: the import system is iterating over that list when it calls ``find_spec``, and
    removing an entry then would make it skip the next finder.  A namespace with a closure
    rather than a class: creating a class costs more than the rest of start-up together.
    """

    def find_spec(name: str, path: "Sequence[str] | None" = None,
                  target: "ModuleType | None" = None) -> "ModuleSpec | None":
        if name not in ROOTS and (watched != "any" or not wakes(name, watched)):
            return None
        return wake(stage, name, path, target)

    stage: Stage = Namespace(
        find_spec=find_spec, sglang_shims_pth=True, watched=watched, site_path=site_path,
        origin=origin, woke=False, problem=None, complained=False)
    return stage


def wake(stage: "Stage", name: str, path: "Sequence[str] | None",
         target: "ModuleType | None") -> "ModuleSpec | None":
    """At the first import of a watched name: load and activate the bootstrap, whose finder
    then answers for this import and every later one; a failure is said, never raised."""
    if stage.woke:
        if stage.problem is not None:
            complain(stage, name)
        return None
    stage.woke = True
    try:
        bootstrap = load_bootstrap(stage.site_path, stage)
        bootstrap.activate(stage.origin)
        watcher = bootstrap.BOOT.watcher
    except Exception as exc:
        stage.problem = f"{type(exc).__name__}: {exc}"
        complain(stage, name)
        return None
    # activate() put its finder before this one: it answers for this import
    if watcher is not None and watcher in sys.meta_path:
        spec: ModuleSpec | None = watcher.find_spec(name, path, target)
        return spec
    return None


def complain(stage: "Stage", name: str) -> None:
    """Say once, at the first import of a watched root, why sglang-shims is not active."""
    if name not in ROOTS or stage.complained:
        return
    stage.complained = True
    try:
        sys.stderr.write(f"sglang-shims: start-up hook failed ({stage.problem}); patches are"
                         f" not applied in this process. To fix it, {REMEDY}.\n")
    except Exception:
        pass


def load_bootstrap(site_path: "list[str]", stage: object = None) -> "ModuleType":
    """``sglang_shims._bootstrap``, loaded from the package found on ``site_path`` (else by
    another finder than ``stage``: an editable install's), without the import system.

    This runs inside ``find_spec``, under the global import lock: importing through the
    import system here can deadlock against a thread that holds a module's lock.  The
    package's ``__init__`` imports nothing.
    """
    loaded = sys.modules.get(f"{PACKAGE}._bootstrap")
    if loaded is not None:
        return loaded
    import os

    external = sys.modules["_frozen_importlib_external"]
    package = sys.modules.get(PACKAGE)
    if package is None:
        spec = external.PathFinder.find_spec(PACKAGE, site_path)
        for finder in [] if spec is not None else list(sys.meta_path):
            find = getattr(finder, "find_spec", None)
            if finder is not stage and finder is not external.PathFinder and find is not None:
                spec = find(PACKAGE, None)
                if spec is not None:
                    break
        if spec is None:
            raise ModuleNotFoundError(f"No module named {PACKAGE!r}", name=PACKAGE)
        package = _execute(spec)
    name = f"{PACKAGE}._bootstrap"
    path = os.path.join(package.__path__[0], "_bootstrap.py")
    loader = external.SourceFileLoader(name, path)
    bootstrap = _execute(external.spec_from_file_location(name, path, loader=loader))
    package._bootstrap = bootstrap  # type: ignore[attr-defined]  # as the import system does
    return bootstrap


def _execute(spec: "ModuleSpec") -> "ModuleType":
    """Create and run the module of ``spec``, in ``sys.modules`` unless it fails."""
    module: ModuleType = sys.modules["_frozen_importlib"].module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)  # type: ignore[union-attr]
    except BaseException:
        del sys.modules[spec.name]
        raise
    return module


def start(origin: str = "pth") -> None:
    """Watch for the first import of a watched root, unless ``SGLANG_SHIMS`` says off.

    Run when the ``.pth`` line (or, on Python 3.15+, PEP 829's ``sglang_shims.start``)
    imports this module, and named by ``sglang_shims.start`` as its entry point; it acts
    once per process however often it runs (``site`` has been seen to read the same
    ``.pth`` twice).  ``origin`` is what ``activate()`` will be told.  Never raises: a
    failure here is said at the first watched import.
    """
    try:
        import os

        watched = mode(os.environ)
        if watched is None or any(getattr(f, PTH_MARK, False) for f in sys.meta_path):
            return
        sys.meta_path.insert(0, first_stage(watched, sys.path[:], origin))
    except Exception as exc:
        try:
            broken = first_stage("roots", [], origin)
            broken.woke, broken.problem = True, f"{type(exc).__name__}: {exc}"
            sys.meta_path.insert(0, broken)
        except Exception:
            pass


# The .pth line's import is the call.  Tests load this file under another name, and call
# what they test.
if __name__ == "_sglang_shims_start":
    start("pth")
