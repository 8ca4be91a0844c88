"""The shape of this test suite, held by reading its files.

A test module never imports another test module (nor ``conftest``): what tests share lives
in ``tests/support``.  Every program under ``tests/programs`` can be assembled (its pieces
are found and imported the way :mod:`tests.support.programs` can put them in place), and is
used: a test or a helper names it (or names the patch and the program, to
``patch_programs``, or the folder whose ``tree/`` it is, to ``write_tree``), or another
program imports it as a piece.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from ..support.programs import PROGRAMS, patch_folder, pieces_imported, program
from ..support.run import REPO

TESTS = REPO / "tests"
CODE = sorted(p for p in TESTS.rglob("*.py") if PROGRAMS not in p.parents)
PROGRAM_FILES = sorted(PROGRAMS.rglob("*.py"))


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(REPO).with_suffix("").parts)


def imported_modules(source: str, module: str) -> set[str]:
    """Every module that ``source`` (the text of ``module``) imports, at any depth, with
    relative imports made absolute (``from x import y`` counts ``x`` and ``x.y``)."""
    package = module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            module_from = ".".join(filter(None, (base, node.module or "")))
            found.add(module_from)
            found.update(f"{module_from}.{alias.name}" for alias in node.names)
    return found


def is_test_module(name: str) -> bool:
    last = name.rpartition(".")[2]
    return name.startswith("tests.") and (last.startswith("test_") or last == "conftest")


def test_no_module_imports_a_test_module() -> None:
    found = {str(path.relative_to(TESTS)): sorted(filter(is_test_module, imported_modules(
        path.read_text(encoding="utf-8"), module_name(path)))) for path in CODE}
    assert {path: names for path, names in found.items() if names} == {}


def test_the_import_check_sees_relative_and_nested_imports() -> None:
    source = ("from ..support.run import need\nfrom . import test_other\n"
              "def f():\n    from .conftest import x\n    import tests.patches.test_y\n")
    names = imported_modules(source, "tests.layer.test_here")
    assert "tests.support.run" in names
    assert set(filter(is_test_module, names)) == {
        "tests.layer.test_other", "tests.layer.conftest", "tests.patches.test_y"}


def test_every_program_assembles_and_compiles() -> None:
    for path in PROGRAM_FILES:
        compile(program(path.relative_to(PROGRAMS).with_suffix("").as_posix()), str(path), "exec")


def programs_named(source: str) -> set[str]:
    """What ``source`` names that may be a program: every string constant, and the programs
    its ``patch_programs(PATCH, "a", ...)`` calls load (``PATCH`` a string or a module-level
    name bound to one)."""
    tree = ast.parse(source)
    strings = {node.targets[0].id: node.value.value for node in tree.body
               if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
               and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)}
    named = {node.value for node in ast.walk(tree)
             if isinstance(node, ast.Constant) and isinstance(node.value, str)}
    for call in ast.walk(tree):
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
                and call.func.id == "patch_programs" and call.args):
            continue
        first = call.args[0]
        patch = first.value if isinstance(first, ast.Constant) else \
            strings.get(first.id) if isinstance(first, ast.Name) else None
        if isinstance(patch, str):
            named |= {f"{patch_folder(patch)}/{arg.value}" for arg in call.args[1:]
                      if isinstance(arg, ast.Constant) and isinstance(arg.value, str)}
    return named


def test_every_program_is_used() -> None:
    named = {name for path in CODE for name in programs_named(path.read_text(encoding="utf-8"))}
    pieces = {piece for path in PROGRAM_FILES for _, _, piece in pieces_imported(path)}
    unused = [name for p in PROGRAM_FILES
              if (name := p.relative_to(PROGRAMS).with_suffix("").as_posix()) not in named
              and p not in pieces
              and not ("/tree/" in name and name.partition("/tree/")[0] in named)]
    assert unused == []


def test_the_use_check_sees_patch_programs_calls() -> None:
    source = ('PATCH = "a-b"\nX, Y = patch_programs(PATCH, "reference", "patched")\n'
              'Z, = patch_programs("c-d", "run")\nW = patch_programs(OTHER, "lost")\n')
    assert programs_named(source) >= {"patches/a_b/reference", "patches/a_b/patched",
                                      "patches/c_d/run"}
    assert not any(name.endswith("/lost") for name in programs_named(source))


def test_no_program_looks_like_a_test_module() -> None:
    """pytest collects ``test_*.py`` wherever it is: a program so named would run as a test."""
    assert [p for p in PROGRAM_FILES if p.name.startswith("test_")] == []


def test_the_mutation_config_names_every_module_once_and_test_files_that_exist() -> None:
    """``tools/mutation/config.toml``: each module of ``sglang_shims`` is mutated (with its
    test files) or named as not mutated, with why; a test file that moved is a stale entry."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # Python 3.10
        import tomli as tomllib
    config = tomllib.loads((REPO / "tools" / "mutation" / "config.toml").read_text("utf-8"))
    named = [m["path"] for m in config["module"]] + [m["path"] for m in config["not_mutated"]]
    modules = sorted(p.relative_to(REPO).as_posix() for p in (REPO / "sglang_shims").rglob("*.py"))
    assert sorted(named) == modules
    stale = sorted({test.split("::")[0] for m in config["module"]
                    for test in [*m["tests"], *m.get("deselect", [])]
                    if not (REPO / test.split("::")[0]).is_file()})
    assert stale == []
    assert all(m["why"] for m in config["not_mutated"])
