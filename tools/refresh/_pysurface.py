"""The export surface of one ``sgl_kernel`` tree, read from its source with ``ast``.

Nothing is imported: the files come from a git tree or a wheel built for a GPU this
machine may not have.  The rules, and why:

* Every statement that runs when a module is imported counts, in every branch of
  ``if``/``try``/``with``/loops: a kernel binds some names only on ROCm, MUSA or macOS,
  and the data answers "can this name exist in that version", so a name bound on any
  platform is present.  The body of ``if TYPE_CHECKING:`` never runs, so it binds
  nothing.  A module-level ``del`` that always runs removes the name.
* **Exports** (``__init__.py``) are the names the package offers as its own: those it
  imports from itself (``from sgl_kernel.x import y``, ``from .x import y``; a star
  import is recorded as ``*sgl_kernel.x`` so a reader can expand it from that
  submodule's names) and the functions and classes it defines.  Plain ``import``\\ s
  (``torch``, ``os``), imports from other distributions (``pathlib.Path``) and
  assignments (loader results, loop variables) are helpers of the package, not part of
  what it exports.
* **Submodule names** are every name the module binds at its top level: imports,
  definitions and assignments alike, because ``from sgl_kernel.gemm import torch`` works
  as well as any kernel name.  Dunder names (``__all__``, ``__version__``) are module
  metadata: a stand-in that stubs every recorded name would turn ``__all__`` into a
  function and break star imports, so they are left out.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

PACKAGE = "sgl_kernel"

# Where a name came from; exports keep definitions and imports from the package itself.
_DEF = "def"


@dataclass(frozen=True)
class Surface:
    """``exports`` of the package and ``submodules``: dotted name -> top-level names."""

    exports: frozenset[str]
    submodules: Mapping[str, frozenset[str]]


def _targets(node: ast.expr) -> Iterator[str]:
    if isinstance(node, ast.Name):
        yield node.id
    elif isinstance(node, (ast.Tuple, ast.List)):
        for element in node.elts:
            yield from _targets(element)
    elif isinstance(node, ast.Starred):
        yield from _targets(node.value)


def _absolute(node: ast.ImportFrom, package: str) -> str:
    """The module a ``from`` import reads, relative levels resolved against ``package``."""
    if not node.level:
        return node.module or ""
    parts = package.split(".")
    base = parts[: len(parts) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _bound(node: ast.stmt, package: str) -> Iterator[tuple[str, str]]:
    """(name, origin) for each name one simple statement binds; origin is ``def``, the
    module of a ``from`` import, or ``""`` (plain import, assignment)."""
    if isinstance(node, ast.ImportFrom):
        module = _absolute(node, package)
        for alias in node.names:
            name = f"*{module}" if alias.name == "*" else alias.asname or alias.name
            yield name, module
    elif isinstance(node, ast.Import):
        for alias in node.names:
            yield alias.asname or alias.name.partition(".")[0], ""
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        yield node.name, _DEF
    elif isinstance(node, ast.Assign):
        for target in node.targets:
            yield from ((name, "") for name in _targets(target))
    elif isinstance(node, ast.AugAssign) or (  # a bare ``x: int`` binds nothing
            isinstance(node, ast.AnnAssign) and node.value is not None):
        yield from ((name, "") for name in _targets(node.target))


def _type_checking(test: ast.expr) -> bool:
    name = test.id if isinstance(test, ast.Name) else getattr(test, "attr", None)
    return name == "TYPE_CHECKING"


def _blocks(node: ast.stmt) -> Iterator[list[ast.stmt]]:
    """The statement lists nested in a compound statement that can run at import time."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return
    if isinstance(node, ast.If) and _type_checking(node.test):
        yield node.orelse
        return
    for field in ("body", "orelse", "finalbody"):
        block = getattr(node, field, None)
        if isinstance(block, list):
            yield block
    for handler in getattr(node, "handlers", []):
        yield handler.body
    for case in getattr(node, "cases", []):
        yield case.body


def bindings(source: str, package: str) -> dict[str, set[str]]:
    """Name -> origins, for every name a module binds when imported (see the module
    docstring); ``package`` is the package relative imports resolve against."""
    found: dict[str, set[str]] = {}

    def visit(body: list[ast.stmt], always: bool) -> None:
        for node in body:
            if always and isinstance(node, ast.Delete):
                for target in node.targets:
                    for name in _targets(target):
                        found.pop(name, None)
            if isinstance(node, (ast.For, ast.AsyncFor)):
                for name in _targets(node.target):
                    found.setdefault(name, set()).add("")
            if isinstance(node, (ast.With, ast.AsyncWith)):
                for item in node.items:
                    if item.optional_vars is not None:
                        for name in _targets(item.optional_vars):
                            found.setdefault(name, set()).add("")
            for name, origin in _bound(node, package):
                found.setdefault(name, set()).add(origin)
            for block in _blocks(node):
                visit(block, False)

    visit(ast.parse(source).body, True)
    return found


def _own(origin: str) -> bool:
    return origin in (_DEF, PACKAGE) or origin.startswith(PACKAGE + ".")


def exports(source: str) -> frozenset[str]:
    """The names ``sgl_kernel/__init__.py`` exports (see the module docstring)."""
    return frozenset(name for name, origins in bindings(source, PACKAGE).items()
                     if any(_own(origin) for origin in origins))


def top_level_names(source: str, package: str) -> frozenset[str]:
    """Every non-dunder name a submodule binds at its top level."""
    return frozenset(name for name in bindings(source, package)
                     if not (name.startswith("__") and name.endswith("__")))


def surface(files: Mapping[str, str]) -> Surface:
    """The surface of a package from ``{path inside sgl_kernel/: source}`` (``.py`` only).

    ``__init__.py`` gives the exports; every other file is a submodule named by its
    dotted path, a subpackage by its folder (``infllm_v2``, ``infllm_v2._loader``).
    """
    if "__init__.py" not in files:
        raise ValueError(f"no {PACKAGE}/__init__.py among {len(files)} files")
    submodules: dict[str, frozenset[str]] = {}
    for path, source in files.items():
        if path == "__init__.py" or not path.endswith(".py"):
            continue
        parts = path[: -len(".py")].split("/")
        if parts[-1] == "__init__":
            parts.pop()
            package = ".".join([PACKAGE, *parts])
        else:
            package = ".".join([PACKAGE, *parts[:-1]])
        try:
            submodules[".".join(parts)] = top_level_names(source, package)
        except SyntaxError as exc:
            raise ValueError(f"{PACKAGE}/{path}: {exc}") from None
    return Surface(exports(files["__init__.py"]), submodules)
