"""No block of code is written twice: two places in ``sglang_shims/`` or ``tests/`` never
share a run of :data:`RUN` or more identical lines.

A copy is a fix that has to land twice, and one day lands once; what repeats is one helper
(for the tests, in ``tests/support``).  Lines are compared without their indentation, so a
block moved into a function is still the same block; blank lines and comment lines are
passed over, so a comment slipped in does not hide a copy, and docstrings count (prose
copied is copied too).  Import statements are passed over too: two modules that need the
same names say so in the same words, and no helper could say it for them.  Only Python
sources are read (data files are not code), and the generated sections of a module --
between ``# BEGIN GENERATED`` and ``# END GENERATED``, written by ``python -m
tools.refresh`` -- are left out: their generator is the one place they are written.
Blocks of one shape with other names and values are not this check's to find; the check
is exact, cheap and needs nothing outside this file.
"""

from __future__ import annotations

import re
import time
from collections import defaultdict
from collections.abc import Iterator, Mapping
from itertools import combinations
from pathlib import Path

from ..support.run import REPO

RUN = 8
"""How many identical lines in a row make a copy."""

TREES = ("sglang_shims", "tests")
GENERATED = ("# BEGIN GENERATED", "# END GENERATED")
IMPORT = re.compile(r"(?:import|from\s+[\w.]+\s+import)\s")


def counted_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line without its indentation) of each line that counts: not blank, not
    a comment, not part of an import statement, not inside a generated section.

    Read line by line, not parsed (parsing every file would cost the check most of its
    time): an import is a line that starts like one, with the lines that continue it (in
    parentheses, or after a backslash)."""
    out: list[tuple[int, str]] = []
    generated = False
    open_parens = 0  # of the import statement being read
    in_import = False
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if in_import or IMPORT.match(line):
            open_parens = (open_parens if in_import else 0) + line.count("(") - line.count(")")
            in_import = open_parens > 0 or line.endswith("\\")
        elif line.startswith(GENERATED):
            generated = line.startswith(GENERATED[0])
        elif line and not line.startswith("#") and not generated:
            out.append((number, line))
    return out


def copies(sources: Mapping[str, str], run: int = RUN) -> list[str]:
    """Each longest run of ``run`` or more identical lines that two places of ``sources``
    (name -> text) share, as ``a.py:10-24 ~ b.py:40-54``, sorted.

    Every window of ``run`` consecutive counted lines is a key (its lines, hashed by the
    dict); two places with one key share a window, and windows that follow each other in
    both places make one run.  A file may copy itself; windows of one file that overlap
    (a line repeated, a bracket on many lines) are not a copy."""
    lines = {name: counted_lines(text) for name, text in sources.items()}
    places: dict[tuple[str, ...], list[tuple[str, int]]] = defaultdict(list)
    for name, counted in lines.items():
        texts = [text for _, text in counted]
        for start in range(len(texts) - run + 1):
            places[tuple(texts[start:start + run])].append((name, start))
    shared: dict[tuple[str, str], set[tuple[int, int]]] = defaultdict(set)
    for windows in places.values():
        for (a, i), (b, j) in combinations(windows, 2):
            if a != b or abs(i - j) >= run:
                shared[a, b].add((i, j))
    out = []
    for (a, b), starts in shared.items():
        for i, j in starts:
            if (i - 1, j - 1) in starts:
                continue  # not the first window of its run
            length = run
            while (i + length - run + 1, j + length - run + 1) in starts:
                length += 1
            out.append(f"{a}:{lines[a][i][0]}-{lines[a][i + length - 1][0]} ~ "
                       f"{b}:{lines[b][j][0]}-{lines[b][j + length - 1][0]}")
    return sorted(out)


def python_sources(root: Path = REPO) -> Iterator[tuple[str, str]]:
    """(path from ``root``, text) of every Python source below :data:`TREES`."""
    for tree in TREES:
        for path in sorted((root / tree).rglob("*.py")):
            relative = path.relative_to(root)
            if not any(part.startswith((".", "__pycache__")) for part in relative.parts):
                yield relative.as_posix(), path.read_text(encoding="utf-8")


def test_no_block_is_written_twice() -> None:
    began = time.process_time()  # CPU time: a loaded machine must not fail the bound
    found = copies(dict(python_sources()))
    took = time.process_time() - began
    assert found == [], "a copied block: make it one helper (tests/support for tests)"
    assert took < 2.0, f"the check took {took:.2f} s of CPU"


BLOCK = [f"value_{n} = compute({n}, scale=2)" for n in range(RUN)]


def _module(name: str, *body: str) -> str:
    """A module whose first lines are its own, then ``body`` from line 4."""
    return "\n".join((f"def {name}():", f"    return {name!r}", "", *body, "")) + "\n"


def test_a_planted_copy_is_found_with_its_lines() -> None:
    indented = ["if True:", *(f"    {line}" for line in BLOCK)]
    assert copies({"a.py": _module("a", *BLOCK), "b.py": _module("b", *indented)}) == [
        "a.py:4-11 ~ b.py:5-12"]


def test_blank_comment_and_import_lines_do_not_hide_a_copy() -> None:
    spread = [*BLOCK[:3], "", "# a remark", "from os import (", "    sep,", "    pathsep)",
              "import os.path, \\", "    sys", *BLOCK[3:]]
    assert copies({"a.py": _module("a", *BLOCK), "b.py": _module("b", *spread)}) == [
        "a.py:4-11 ~ b.py:4-18"]


def test_shared_imports_alone_are_not_a_copy() -> None:
    imports = [f"import module_{n}" for n in range(2 * RUN)]
    assert copies({"a.py": _module("a", *imports), "b.py": _module("b", *imports)}) == []


def test_a_longer_copy_is_one_run_and_a_shorter_one_none() -> None:
    longer = [*BLOCK, "value_x = compute(99)", "return value_x"]
    assert copies({"a.py": "\n".join(longer), "b.py": "\n".join(longer)}) == [
        "a.py:1-10 ~ b.py:1-10"]
    assert copies({"a.py": "\n".join(BLOCK[1:]), "b.py": "\n".join(BLOCK[1:])}) == []


def test_a_file_copying_itself_is_found_but_a_repeated_line_is_not() -> None:
    assert copies({"a.py": "\n".join([*BLOCK, "other()", *BLOCK])}) == ["a.py:1-8 ~ a.py:10-17"]
    assert copies({"a.py": "\n".join([")"] * (2 * RUN - 1))}) == []


def test_generated_sections_are_left_out() -> None:
    generated = ["# BEGIN GENERATED WATCH TABLE", *BLOCK, "# END GENERATED WATCH TABLE"]
    assert copies({"a.py": _module("a", *BLOCK), "b.py": _module("b", *generated)}) == []
    assert copies({"a.py": _module("a", *BLOCK),
                   "b.py": _module("b", *generated, *BLOCK)}) == ["a.py:4-11 ~ b.py:14-21"]
