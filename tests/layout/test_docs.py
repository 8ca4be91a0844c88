"""docs/architecture.md names the test that holds each rule it states: those tests exist.

A page that points at a renamed or deleted test would claim a guard that is gone; this
reads every ``tests/...py`` path in the page (with ``::name``, a test function; ``*`` at
the end of the name, any test starting so) and fails on one that does not resolve.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from ..support.run import REPO

PAGE = REPO / "docs" / "architecture.md"
REFERENCE = re.compile(r"`(tests/[\w/]+\.py)(?:::(\w+\*?))?`")


def missing(text: str, root: Path) -> list[str]:
    """The references in ``text`` that name no file, or no test function, under ``root``."""
    out = []
    for path, name in REFERENCE.findall(text):
        file = root / path
        if not file.is_file():
            out.append(path)
            continue
        if not name:
            continue
        tree = ast.parse(file.read_text(encoding="utf-8"))
        tests = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        prefix = name.rstrip("*")
        if not any(t == name or (name.endswith("*") and t.startswith(prefix)) for t in tests):
            out.append(f"{path}::{name}")
    return out


def test_every_test_the_architecture_page_names_exists() -> None:
    text = PAGE.read_text(encoding="utf-8")
    assert len(REFERENCE.findall(text)) >= 10, "the page lists the tests that hold its rules"
    assert missing(text, REPO) == []


def test_a_renamed_test_is_found(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text("def test_one():\n    pass\n")
    text = "`tests/test_a.py::test_one` `tests/test_a.py::test_on*` `tests/test_a.py::test_two`" \
        " `tests/test_b.py`"
    assert missing(text, tmp_path) == ["tests/test_a.py::test_two", "tests/test_b.py"]
