"""What patch code asks the engine instead of finding out for itself, held by reading the
files: installed versions come from ``ctx.version``, and the kernel's two distribution
names are looked up in one order, ``sglang_shims.patching.KERNEL_DISTS``, everywhere."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from sglang_shims.patching import KERNEL_DISTS

from ..support.run import REPO

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

PATCH_CODE = sorted((REPO / "patches").glob("*/*.py"))
OUR_CODE = sorted((REPO / "sglang_shims").rglob("*.py"))
HOME = REPO / "sglang_shims" / "patching" / "dists.py"


def _where(path: Path, node: ast.AST) -> str:
    return f"{path.relative_to(REPO)}:{getattr(node, 'lineno', 0)}"


def reads_versions(path: Path) -> list[str]:
    """Where the file asks importlib.metadata for a version itself."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (isinstance(node, ast.ImportFrom) and node.module == "importlib.metadata"
                and any(a.name == "version" for a in node.names)):
            found.append(_where(path, node))
        if (isinstance(node, ast.Attribute) and node.attr == "version"
                and isinstance(node.value, ast.Name) and node.value.id == "metadata"):
            found.append(_where(path, node))
    return found


def kernel_orders(path: Path) -> list[str]:
    """Where the file spells the kernel's two names as a sequence of its own and looks them
    up in that order: iterates over it, hands it to ``first_installed`` or names it."""
    def both(node: ast.AST | None) -> bool:
        return isinstance(node, (ast.Tuple, ast.List)) and {
            e.value for e in node.elts if isinstance(e, ast.Constant)} == set(KERNEL_DISTS)

    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.For, ast.comprehension)) and both(node.iter):
            found.append(_where(path, node.iter))
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "first_installed":
            found += [_where(path, arg) for arg in node.args if both(arg)]
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and both(node.value):
            found.append(_where(path, node))
    return found


def test_no_patch_reads_a_version_itself() -> None:
    """``ctx.version(dist)`` answers from the engine's environment, which read each
    distribution's metadata once, for the gates; a patch asking again pays again."""
    assert [hit for path in PATCH_CODE for hit in reads_versions(path)] == []


def test_the_kernel_names_have_one_order() -> None:
    offenders = [hit for path in PATCH_CODE + OUR_CODE if path != HOME
                 for hit in kernel_orders(path)]
    assert offenders == []
    assert kernel_orders(HOME) == [f"{HOME.relative_to(REPO)}:5"]  # the check sees one


def test_manifests_list_the_kernel_names_in_that_order() -> None:
    """A gate ``"a | b"`` is judged by the first installed of its names, and a proxy's
    message names the first installed of ``provider_dists``."""
    found = {}
    for path in sorted((REPO / "patches").glob("*/manifest.toml")):
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        tables = [data.get("requires", {}), data["retire"].get("versions", {})]
        keys = [tuple(d.strip() for d in key.split("|")) for t in tables for key in t]
        keys += [tuple(p.get("provider_dists", ())) for p in data.get("provide", [])]
        found[path.parent.name] = [k for k in keys if set(k) >= set(KERNEL_DISTS)]
    assert {name: [k for k in keys if k != KERNEL_DISTS] for name, keys in found.items()
            if keys} == {name: [] for name, keys in found.items() if keys}
    assert len([name for name, keys in found.items() if keys]) >= 3
