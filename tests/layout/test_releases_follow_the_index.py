"""No code names today's newest release of a watched distribution as a constant.

The newest release of sglang, its kernel, torch, triton, transformers and the rest is
written down once, in the refresh's snapshot of the index (``tools/refresh/data/
index.json``); code that needs it reads that or the data the matrix recorded.  A constant
(``LAST = Version("0.5.23")``) goes stale the week upstream ships again: the runner then
refuses the new release instead of testing it.  Read as code (a string that is a version,
or a specifier ending at one), not as prose: a docstring or a message that says which
release was read is a dated fact, not a rule.  Tests are not read: their versions are
fixtures, each the release whose behaviour that test pins down.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

from packaging.version import Version

from ..support.run import REPO

SNAPSHOT = REPO / "tools" / "refresh" / "data" / "index.json"
CODE = sorted([*(REPO / "sglang_shims").rglob("*.py"), *(REPO / "tools").rglob("*.py"),
               *(REPO / "patches").glob("*/*.py")])
FACT_TABLES = {
    REPO / "sglang_shims" / "cli" / "doctor" / "kernel_facts.py":
        "one row per range of published kernel builds, each read from its wheels or build"
        " files; a kernel newer than the last row is reported as not in the table",
}


def newest() -> dict[str, list[str]]:
    """{version: the watched projects whose newest final release with a wheel it is}."""
    found: dict[str, list[str]] = {}
    for project, listed in json.loads(SNAPSHOT.read_text(encoding="utf-8"))["projects"].items():
        finals = [Version(v) for v, e in listed.items() if e["wheel"]]
        finals = [v for v in finals if not v.is_prerelease and not v.is_devrelease]
        if finals:
            found.setdefault(str(max(finals)), []).append(project)
    return found


def _docstrings(tree: ast.AST) -> set[int]:
    kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    return {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, kinds) and node.body and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)}


def constants(path: Path, versions: dict[str, list[str]]) -> list[str]:
    """Where ``path`` holds one of ``versions`` as a version or a specifier constant."""
    shape = re.compile(r"\s*(?:[<>=!~]=?=?\s*)?(" + "|".join(map(re.escape, versions))
                       + r")\s*")
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = _docstrings(tree)
    where = path.relative_to(REPO) if path.is_relative_to(REPO) else path.name
    found = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                and id(node) not in docs):
            hit = shape.fullmatch(node.value)
            if hit:
                found.append((node.lineno, f"{where}:{node.lineno}: {node.value!r}"
                              f" (the newest {', '.join(versions[hit.group(1)])})"))
    return [line for _, line in sorted(found)]


def test_the_snapshot_names_a_newest_release_of_each_project() -> None:
    versions = newest()
    projects = {p for found in versions.values() for p in found}
    assert {"sglang", "sglang-kernel", "torch", "triton", "transformers",
            "flashinfer-python"} <= projects


def test_no_code_hard_codes_the_newest_release() -> None:
    versions = newest()
    found = [line for path in CODE if path not in FACT_TABLES
             for line in constants(path, versions)]
    assert not found, ("read the newest release from the refresh's snapshot or the matrix"
                       " data, not from a constant:\n" + "\n".join(found))


def test_the_reading_finds_a_constant(tmp_path: Path) -> None:
    """What the scan is for, planted: the runner's old upper bound, and a specifier."""
    versions = {"0.5.23": ["sglang"]}
    planted = tmp_path / "run.py"
    planted.write_text('"""0.5.23 is the newest read."""\nLAST = Version("0.5.23")\n'
                       'WANT = "<=0.5.23"\nSAID = "checked on 0.5.23"\n', encoding="utf-8")
    found = constants(planted, versions)
    assert [line.split(": ", 1)[1] for line in found] == [
        "'0.5.23' (the newest sglang)", "'<=0.5.23' (the newest sglang)"]
