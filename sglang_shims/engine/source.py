"""Read target modules' source without executing them, and check fingerprints.

Both the runtime (before a patch acts) and the CLI (``list``, ``check``, with no
torch or sglang imported) judge a target by its source file.  Locating a module
never imports it: the top-level package is found by asking the ``sys.meta_path``
finders, and each submodule by searching its parent's ``__path__`` on disk.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

from .._bootstrap import FINDER_MARK
from ..catalog.manifest import Fingerprint


def _search(parts: list[str], locations: list[Path]) -> Path | None:
    """Find ``parts`` under ``locations`` on disk (packages, modules, namespace portions).

    importlib's PathFinder is not used: it needs the parent package in sys.modules for
    namespace portions (sglang.srt has no __init__.py in some releases).
    """
    for index, part in enumerate(parts):
        last = index == len(parts) - 1
        found: list[Path] = []
        for location in locations:
            package = location / part
            if (package / "__init__.py").is_file():
                if last:
                    return package / "__init__.py"
                found = [package]
                break
            if last and (location / f"{part}.py").is_file():
                return location / f"{part}.py"
            if package.is_dir():
                found.append(package)  # a namespace portion; keep looking for more
        if not found or last:
            return None
        locations = found
    return None


def locate(module: str, search_path: list[Path] | None = None) -> Path | None:
    """Return the source file of ``module`` without importing it, or None.

    With ``search_path`` only those folders are searched (a release unpacked for the
    static matrix); otherwise the live ``sys.meta_path`` finders locate the package.
    """
    parts = module.split(".")
    if search_path is not None:
        return _search(parts, list(search_path))
    loaded = sys.modules.get(module)
    origin = getattr(loaded, "__file__", None)
    if origin and origin.endswith(".py"):
        return Path(origin)
    spec = None
    for finder in list(sys.meta_path):
        if getattr(type(finder), FINDER_MARK, False):
            continue  # ours: they only wrap, or complain about, what the others find
        find = getattr(finder, "find_spec", None)
        if find is None:
            continue
        try:
            spec = find(parts[0], None)
        except Exception:
            continue
        if spec is not None:
            break
    if spec is None:
        return None
    if len(parts) == 1:
        origin = getattr(spec, "origin", None)
        return Path(origin) if origin and origin.endswith(".py") else None
    locations = [Path(p) for p in (getattr(spec, "submodule_search_locations", None) or [])]
    return _search(parts[1:], locations)


def read(module: str, search_path: list[Path] | None = None) -> str | None:
    path = locate(module, search_path)
    if path is None:
        return None
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


# ``try/except*`` (3.11+) nests statements the same way ``try`` does.
_TRY_NODES: tuple[type[ast.stmt], ...] = (ast.Try, getattr(ast, "TryStar", ast.Try))


def _top_level(tree: ast.Module) -> Iterator[ast.stmt]:
    """Statements that run when the module body runs: the body and its if/try blocks."""
    stack: list[ast.stmt] = list(reversed(tree.body))
    while stack:
        node = stack.pop()
        yield node
        blocks: list[list[ast.stmt]] = []
        if isinstance(node, ast.If | ast.For | ast.While | ast.With):
            blocks = [node.body, node.orelse] if not isinstance(node, ast.With) else [node.body]
        elif isinstance(node, _TRY_NODES):
            handlers: list[ast.ExceptHandler] = getattr(node, "handlers", [])
            blocks = [getattr(node, "body", []), getattr(node, "orelse", []),
                      getattr(node, "finalbody", []), *(h.body for h in handlers)]
        for block in reversed(blocks):
            stack.extend(reversed(block))


def module_level_imports(source: str, from_module: str) -> set[str]:
    """Names bound by module-level ``from <from_module> import ...`` statements."""
    names: set[str] = set()
    for node in _top_level(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module == from_module:
            names.update(alias.name for alias in node.names)
    return names


def bound_names(source: str) -> tuple[set[str], list[str]]:
    """Names a module binds at top level, and the modules it star-imports."""
    names: set[str] = set()
    stars: list[str] = []
    for node in _top_level(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update((a.asname or a.name).partition(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.name == "*":
                    stars.append(node.module if node.level == 0 and node.module else "")
                else:
                    names.add(alias.asname or alias.name)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
    return names, stars


def exported_names(module: str, search_path: list[Path] | None = None,
                   depth: int = 3) -> tuple[set[str], bool] | None:
    """Names ``module`` would bind, following absolute star imports statically.

    Returns (names, complete); ``complete`` is False when a star import could not be
    followed (relative, unreadable, or too deep).  None if the module has no source.
    """
    source = read(module, search_path)
    if source is None:
        return None
    names, stars = bound_names(source)
    complete = True
    for star in stars:
        inner = exported_names(star, search_path, depth - 1) if star and depth > 0 else None
        if inner is None:
            complete = False
            continue
        inner_names, inner_complete = inner
        names |= {n for n in inner_names if not n.startswith("_")}
        complete = complete and inner_complete
    return names, complete


def _find_def(tree: ast.Module, qualname: str) -> ast.AST | None:
    body: list[ast.stmt] = tree.body
    found: ast.AST | None = None
    for part in qualname.split("."):
        found = None
        for node in body:
            if (isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
                    and node.name == part):
                found = node
                body = node.body
                break
        if found is None:
            return None
    return found


def function_hash(source: str, qualname: str) -> str | None:
    """Short sha256 of one def/class, decorators included, normalised for indentation.

    Whitespace at line ends and the def's own indentation do not count; everything
    else does, so any upstream edit to the function changes the hash.
    """
    tree = ast.parse(source)
    node = _find_def(tree, qualname)
    if node is None:
        return None
    # imported here: only sha256 fingerprints need them, not every process that wakes
    import hashlib
    import textwrap

    lines = source.splitlines()
    decorators = getattr(node, "decorator_list", [])
    start = min([node.lineno, *(d.lineno for d in decorators)])  # type: ignore[attr-defined]
    end = node.end_lineno or node.lineno  # type: ignore[attr-defined]
    text = textwrap.dedent("\n".join(lines[start - 1:end]))
    normalised = "\n".join(line.rstrip() for line in text.splitlines())
    return hashlib.sha256(normalised.encode("utf-8")).hexdigest()[:16]


def check(fp: Fingerprint, source: str | None) -> tuple[bool, str]:
    """Does ``source`` (of ``fp.module``) still hold what the patch expects?"""
    if source is None:
        return False, f"cannot read the source of {fp.module}"
    if fp.anchors:
        missing = [a for a in fp.anchors if a not in source]
        if missing:
            return False, f"{fp.module}: anchor not found: {missing[0]!r}"
        return True, f"{fp.module}: all {len(fp.anchors)} anchor(s) found"
    if fp.sha256:
        try:
            digest = function_hash(source, fp.function or "")
        except SyntaxError as exc:
            return False, f"{fp.module}: cannot parse ({exc})"
        if digest is None:
            return False, f"{fp.module}: no definition named {fp.function}"
        if digest not in fp.sha256:
            return False, (f"{fp.module}:{fp.function} has source hash {digest}, "
                           f"expected one of {list(fp.sha256)}")
        return True, f"{fp.module}:{fp.function} source hash {digest} matches"
    try:
        bound = module_level_imports(source, fp.import_from or "")
    except SyntaxError as exc:
        return False, f"{fp.module}: cannot parse ({exc})"
    missing = [n for n in fp.import_names if n not in bound]
    if missing:
        return False, (f"{fp.module} no longer does `from {fp.import_from} import "
                       f"{', '.join(missing)}` at module level")
    return True, f"{fp.module} imports {', '.join(fp.import_names)} from {fp.import_from}"


def read_first(modules: tuple[str, ...], search_path: list[Path] | None = None
               ) -> tuple[str, str | None]:
    """(module, source) of the first of ``modules`` whose source can be read."""
    for module in modules:
        src = read(module, search_path)
        if src is not None:
            return module, src
    return modules[0], None


def check_all(fps: tuple[Fingerprint, ...], search_path: list[Path] | None = None
              ) -> tuple[bool, list[str], str]:
    """Check every fingerprint (see :func:`locate` for ``search_path``).

    Returns (all matched, one line per fingerprint, the first mismatch or "").
    """
    details = []
    failure = ""
    for fp in fps:
        module, src = read_first(fp.modules, search_path)
        good, detail = check(fp.with_module(module), src)
        if src is None and all(locate(m, search_path) is None for m in fp.modules):
            # not changed: gone (a partial install, or a release that dropped the file)
            detail = (f"{' / '.join(fp.modules)} {'is' if len(fp.modules) == 1 else 'are'}"
                      " not installed here (no source file found)")
        details.append(detail)
        if not good and not failure:
            failure = detail
    return not failure, details, failure
