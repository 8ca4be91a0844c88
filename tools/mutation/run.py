"""A small mutation-testing harness: does the suite notice when the core code is wrong?

For each module named in ``config.toml``, every mutant is one small change to its syntax
tree (a comparison flipped, ``and``/``or`` swapped, a ``not`` dropped, a constant changed,
a statement replaced by ``pass``, a ``return`` value replaced by ``None``...), spliced into
the file's text in place of the node it changes, comments and layout kept.  The mutant
is written over the module in a *scratch checkout* (never the working tree others edit),
and the module's test files are run with ``SGLANG_SHIMS_CI=1 python -m pytest -x -n0``.
A mutant is *killed* when the run fails or times out, *survived* when it passes.

Usage (from the repository root)::

    git worktree add /tmp/mut HEAD
    python tools/mutation/run.py --tree /tmp/mut [--module sglang_shims/engine/gates.py]
                                 [--every N] [--limit N] [--out mutation-result.json]

``--every N`` runs every N-th mutant in source order (a deterministic sample: the whole set
takes hours on 2 cores); ``config.toml`` sets the default per module.

The unmutated tree must pass first (checked once per module).  Not collected by pytest.
"""

from __future__ import annotations

import argparse
import ast
import copy
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10
    import tomli as tomllib

HERE = Path(__file__).resolve().parent

FLIP_COMPARE: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Lt: ast.GtE, ast.GtE: ast.Lt,
    ast.Gt: ast.LtE, ast.LtE: ast.Gt, ast.In: ast.NotIn, ast.NotIn: ast.In,
    ast.Is: ast.IsNot, ast.IsNot: ast.Is,
}


def _docstring(node: ast.AST, parent: ast.AST | None) -> bool:
    body = getattr(parent, "body", None)
    return (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str) and isinstance(body, list) and bool(body)
            and body[0] is node)


def _mutations(node: ast.AST, parent: ast.AST | None) -> Iterator[tuple[str, ast.AST | None]]:
    """(description, replacement) for one node; a replacement of None deletes nothing."""
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        op = type(node.ops[0])
        if op in FLIP_COMPARE:
            new = copy.deepcopy(node)
            new.ops = [FLIP_COMPARE[op]()]
            yield f"{op.__name__} -> {FLIP_COMPARE[op].__name__}", new
    elif isinstance(node, ast.BoolOp):
        swapped = copy.deepcopy(node)
        swapped.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        yield f"{type(node.op).__name__} -> {type(swapped.op).__name__}", swapped
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        yield "drop not", copy.deepcopy(node.operand)
    elif isinstance(node, ast.Constant) and not isinstance(node.value, str):
        if isinstance(node.value, bool):
            yield f"{node.value} -> {not node.value}", ast.Constant(not node.value)
        elif isinstance(node.value, int):
            yield f"{node.value} -> {node.value + 1}", ast.Constant(node.value + 1)
    elif isinstance(node, ast.Return) and node.value is not None and not (
            isinstance(node.value, ast.Constant) and node.value.value is None):
        yield "return None", ast.Return(value=ast.Constant(None))
    elif isinstance(node, ast.Break):
        yield "break -> continue", ast.Continue()
    if (isinstance(node, (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Raise,
                          ast.Delete))
            and not _docstring(node, parent) and not isinstance(parent, ast.Module)):
        yield "statement -> pass", ast.Pass()


def _walk(tree: ast.AST) -> Iterator[tuple[ast.AST, ast.AST | None]]:
    stack: list[tuple[ast.AST, ast.AST | None]] = [(tree, None)]
    while stack:
        node, parent = stack.pop()
        yield node, parent
        # type annotations never run: mutating them tells nothing
        children = [c for name, c in _fields(node)
                    if name not in ("annotation", "returns", "type_comment")]
        stack.extend((c, node) for c in reversed(children))


def _fields(node: ast.AST) -> Iterator[tuple[str, ast.AST]]:
    for name, value in ast.iter_fields(node):
        if isinstance(value, ast.AST):
            yield name, value
        elif isinstance(value, list):
            yield from ((name, v) for v in value if isinstance(v, ast.AST))


def _splice(source: str, node: ast.AST, replacement: ast.AST) -> str | None:
    """``source`` with ``node``'s exact text replaced (comments and layout elsewhere kept)."""
    lines = source.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    try:
        begin = starts[node.lineno - 1] + len(  # type: ignore[attr-defined]
            lines[node.lineno - 1].encode()[:node.col_offset].decode())  # type: ignore[attr-defined]
        end = starts[node.end_lineno - 1] + len(  # type: ignore[attr-defined]
            lines[node.end_lineno - 1].encode()[:node.end_col_offset].decode())  # type: ignore[attr-defined]
    except (AttributeError, IndexError, TypeError, UnicodeDecodeError):
        return None
    text = ast.unparse(replacement)
    if isinstance(node, ast.expr):
        text = f"({text})"
    mutated = source[:begin] + text + source[end:]
    try:
        ast.parse(mutated)
    except SyntaxError:
        return None
    return mutated


def _inside_fstring(tree: ast.AST) -> set[int]:
    return {id(n) for f in ast.walk(tree) if isinstance(f, ast.JoinedStr) for n in ast.walk(f)}


def mutants(source: str) -> list[tuple[int, str, str]]:
    """Every mutant of ``source``: (line, description, mutated source)."""
    tree = ast.parse(source)
    skip = _inside_fstring(tree)
    out = []
    for node, parent in _walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)) or id(node) in skip:
            continue
        for description, replacement in _mutations(node, parent):
            assert replacement is not None
            mutated = _splice(source, node, replacement)
            if mutated is not None and mutated != source:
                out.append((getattr(node, "lineno", 0), description, mutated))
    out.sort(key=lambda m: m[0])
    return out


def run_tests(tree: Path, tests: list[str], timeout: float) -> tuple[str, float]:
    """``tests``: pytest arguments (files, ``--deselect ID``)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SGLANG_SHIMS")}
    env.update(SGLANG_SHIMS_CI="1", PYTHONPATH=str(tree), PYTHONDONTWRITEBYTECODE="1")
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-n0", "-p", "no:cacheprovider",
           "--no-header", *tests]
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True,
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return "timeout", time.monotonic() - start
    return ("survived" if proc.returncode == 0 else "killed"), time.monotonic() - start


def render(results: dict[str, list[dict[str, object]]]) -> str:
    """A markdown table per module (killed / survived / timeout) and the survivors."""
    out = ["| module | mutants | killed | timeout | survived | killed % | test time |",
           "|---|---|---|---|---|---|---|"]
    total = killed_all = 0
    for path, rows in results.items():
        count = {k: sum(r["outcome"] == k for r in rows) for k in ("killed", "timeout",
                                                                   "survived")}
        seconds = sum(float(str(r["seconds"])) for r in rows)
        killed = count["killed"] + count["timeout"]
        total, killed_all = total + len(rows), killed_all + killed
        out.append(f"| `{path}` | {len(rows)} | {count['killed']} | {count['timeout']} | "
                   f"{count['survived']} | {100 * killed / max(len(rows), 1):.0f} % | "
                   f"{seconds:.0f} s |")
    out.append(f"| all | {total} | | | {total - killed_all} | "
               f"{100 * killed_all / max(total, 1):.0f} % | |")
    out += ["", "Survivors:", ""]
    out += [f"- `{path}:{r['line']}` {r['mutation']}" for path, rows in results.items()
            for r in rows if r["outcome"] == "survived"]
    return "\n".join(out) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--render", type=Path, help="print a result file as markdown, and stop")
    parser.add_argument("--tree", type=Path, help="a scratch checkout")
    parser.add_argument("--module", action="append", help="only these modules (repeatable)")
    parser.add_argument("--limit", type=int, default=0, help="at most N mutants per module")
    parser.add_argument("--every", type=int, default=0,
                        help="every N-th mutant (deterministic sample; default: config's)")
    parser.add_argument("--out", type=Path, default=Path("mutation-result.json"))
    args = parser.parse_args()
    if args.render:
        print(render(json.loads(args.render.read_text(encoding="utf-8"))), end="")
        return 0
    if args.tree is None:
        parser.error("--tree is required")
    config = tomllib.loads((HERE / "config.toml").read_text(encoding="utf-8"))
    timeout = float(config.get("timeout_s", 300))
    results: dict[str, list[dict[str, object]]] = {}
    started = time.monotonic()
    for entry in config["module"]:
        path = entry["path"]
        if args.module and path not in args.module:
            continue
        target = args.tree / path
        original = target.read_text(encoding="utf-8")
        found = mutants(original)
        every = args.every or int(entry.get("every", config.get("every", 1)))
        found = found[::every]
        if args.limit:
            found = found[:args.limit]
        tests = list(entry["tests"])
        for test_id in entry.get("deselect", []):
            tests += ["--deselect", test_id]
        outcome, seconds = run_tests(args.tree, tests, timeout * 3)
        if outcome != "survived":
            print(f"{path}: the unmutated tree fails its tests ({outcome}); skipped", flush=True)
            continue
        rows = results.setdefault(path, [])
        try:
            for line, description, text in found:
                target.write_text(text, encoding="utf-8")
                outcome, seconds = run_tests(args.tree, tests, timeout)
                rows.append({"line": line, "mutation": description, "outcome": outcome,
                             "seconds": round(seconds, 1)})
                print(f"{path}:{line}: {description}: {outcome} ({seconds:.0f} s)", flush=True)
        finally:
            target.write_text(original, encoding="utf-8")
        args.out.write_text(json.dumps(results, indent=1), encoding="utf-8")
    print(f"total {time.monotonic() - started:.0f} s", flush=True)
    for path, rows in results.items():
        killed = sum(r["outcome"] != "survived" for r in rows)
        print(f"{path}: {killed}/{len(rows)} killed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
