"""The programs of ``tests/programs``, the code that tests run in fresh interpreters.

A program is a plain, linted Python file.  Where programs share a piece -- one H100 faked
for sglang's import-time checks, importing a list of modules, how a patch test's program
reports the patch's state -- the piece is a file of its own that the program imports as a
module: ``import fake_cuda``, ``from patch_state import print_result``.  :func:`program`
puts the piece's text in place of that import (the piece is looked up beside the program,
then at the top of ``tests/programs``), once, where the import stands: the interpreter runs
one flat text, exactly as if the pieces had been pasted together, while the file says where
each name comes from and the linter can check it.

Files a test writes into a fake package rather than runs (a stand-in ``sglang/srt/utils.py``,
a remote-code module) sit in a ``tree/`` folder beside the programs that use them, where no
program's import can take them for a piece.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from .run import REPO

PROGRAMS = REPO / "tests" / "programs"


def program(name: str) -> str:
    """The text of ``tests/programs/<name>.py`` with its pieces put in place."""
    return assemble(PROGRAMS / f"{name}.py")


def patch_folder(patch: str) -> str:
    """The folder of the programs of patch ``patch``'s test, named after its id:
    ``patches/<id with underscores>`` (under ``tests/programs``)."""
    return f"patches/{patch.replace('-', '_')}"


def patch_programs(patch: str, *names: str) -> tuple[str, ...]:
    """The programs ``names`` of :func:`patch_folder`, in that order."""
    return tuple(program(f"{patch_folder(patch)}/{name}") for name in names)


def write_tree(name: str, root: Path) -> Path:
    """Write the files of ``tests/programs/<name>/tree`` under ``root``, at the same
    relative paths, pieces in place; ``root``."""
    tree = PROGRAMS / name / "tree"
    for path in sorted(tree.rglob("*.py")):
        target = root / path.relative_to(tree)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(assemble(path), encoding="utf-8")
    return root


def tree_fixture(name: str) -> Any:
    """A test file's module-scoped fixture: a fresh folder holding the tree of
    ``tests/programs/<name>`` (:func:`write_tree`), for a program to find on its path --
    remote code as transformers' dynamic module loader would import it, say."""

    @pytest.fixture(scope="module")
    def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
        return write_tree(name, tmp_path_factory.mktemp("tree"))

    return tree


def assemble(path: Path) -> str:
    """The text of the program at ``path`` (anywhere: the matrix's probe lives in tools/)
    with its pieces put in place."""
    return _assemble(path, set())


def piece_of(folder: Path, module: str) -> Path | None:
    """The piece file that ``import <module>`` names in a program of ``folder``, if any."""
    if "." in module:
        return None
    for base in (folder, PROGRAMS):
        candidate = base / f"{module}.py"
        if candidate.is_file():
            return candidate
    return None


def pieces_imported(path: Path) -> list[tuple[int, int, Path]]:
    """(first line, last line, piece) of each piece the program at ``path`` imports.

    A piece is imported at the top level, alone on its statement and without ``as``: the
    text that replaces the import cannot be renamed or run inside a function."""
    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text, str(path))
    top = set(tree.body)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules = [node.module]
        else:
            continue
        pieces = [piece_of(path.parent, module) for module in modules]
        if not any(pieces):
            continue
        where = f"{path}:{node.lineno}"
        assert node in top, f"{where}: a piece is imported at the top level of a program"
        assert len(pieces) == 1, f"{where}: import a piece on a statement of its own"
        assert isinstance(node, ast.ImportFrom) or node.names[0].asname is None, \
            f"{where}: a piece cannot be imported under another name"
        piece = pieces[0]
        assert piece is not None and node.end_lineno is not None
        assert not any(other is not node and other.lineno <= node.end_lineno
                       and (other.end_lineno or other.lineno) >= node.lineno
                       for other in tree.body), f"{where}: a piece's import has its lines alone"
        found.append((node.lineno, node.end_lineno, piece))
    return found


def _assemble(path: Path, done: set[Path]) -> str:
    """The program's text, each piece in place of its first import (and of no later one:
    a module runs once, where it is first imported)."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    spans = {first: (last, piece) for first, last, piece in pieces_imported(path)}
    out: list[str] = []
    number = 1
    while number <= len(lines):
        if number not in spans:
            out.append(lines[number - 1])
            number += 1
            continue
        last, piece = spans[number]
        if piece not in done:
            done.add(piece)
            text = _assemble(piece, done)
            out.append(text if text.endswith("\n") else text + "\n")
        number = last + 1
    return "".join(out)


FAKE_CUDA = program("fake_cuda")
"""The text of ``fake_cuda.py``, for code that is not a program of its own (the matrix
tool's cells and the programs still written as strings)."""
