"""A small mutation-testing harness: does the suite notice when the code is wrong?

For each module named in ``config.toml``, every mutant is one small change to its syntax
tree (a comparison flipped, ``and``/``or`` swapped, a ``not`` dropped, a constant changed,
a statement replaced by ``pass``, a ``return`` value replaced by ``None``...), spliced into
the file's text in place of the node it changes, comments and layout kept.  The mutant
is written over the module in a *scratch checkout* (never the working tree others edit),
and the module's test files are run as ``SGLANG_SHIMS_CI=1 python -m pytest -x -n0`` would
run them (by a server that has imported pytest once and forks a child per run).
A mutant is *killed* when the run fails or times out, *survived* when it passes.  The first
test file runs alone first (most mutants fail it, and collecting every file is most of a
run), then, if it passed, all of them.

Usage (from the repository root)::

    git worktree add /tmp/mut HEAD
    python tools/mutation/run.py --tree /tmp/mut [--module sglang_shims/engine/gates.py]
                                 [--every N] [--limit N] [--out mutation-result.json]
    python tools/mutation/run.py --tree /tmp/mut --module M --list        # index, line, change
    python tools/mutation/run.py --tree /tmp/mut --module M --show N      # mutant N's line
    python tools/mutation/run.py --tree /tmp/mut --module M --mutant N    # plant N, run tests
    python tools/mutation/run.py --tree /tmp/mut --rerun --out result.json  # survivors again
    python tools/mutation/run.py --render result.json                     # markdown tables

``--every N`` runs every N-th mutant in source order (a deterministic sample: the whole set
takes hours on 2 cores); ``config.toml`` sets it per module, with the test files, and
names the equivalent mutants (left out of the score).  Results of several runs for
different modules accumulate in one ``--out`` file.

The unmutated tree must pass first (checked once per module).  Not collected by pytest.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import copy
import json
import os
import select
import signal
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


def _ellipsis(node: ast.AST) -> bool:
    """A bare ``...`` (a Protocol's method body): it does nothing, as ``pass`` does."""
    return (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
            and node.value.value is Ellipsis)


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
            and not _docstring(node, parent) and not _ellipsis(node)
            and not isinstance(parent, ast.Module)):
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


PYTEST_ARGS = ["-x", "-q", "-n0", "-p", "no:cacheprovider", "--no-header"]


class Runner:
    """Runs pytest in ``tree`` as ``SGLANG_SHIMS_CI=1 python -m pytest -x -n0`` would, through
    a small server (``run.py --serve``) that has imported pytest once and forks a child per
    run: on a loaded machine the interpreter's and pytest's start were most of a killed
    mutant's time.  The server imports nothing of the tree, so each child imports the
    module under test afresh, mutated."""

    def __init__(self, tree: Path) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("SGLANG_SHIMS")}
        env.update(SGLANG_SHIMS_CI="1", PYTHONPATH=str(tree), PYTHONDONTWRITEBYTECODE="1")
        self.proc = subprocess.Popen([sys.executable, __file__, "--serve"], cwd=tree, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
        self.buffer = b""

    def _line(self, deadline: float | None) -> str | None:
        """The server's next line, or None at ``deadline`` (read unbuffered, so that
        ``select`` sees what has come)."""
        assert self.proc.stdout is not None
        while b"\n" not in self.buffer:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not select.select([self.proc.stdout], [], [], wait)[0]:
                return None
            chunk = os.read(self.proc.stdout.fileno(), 4096)
            if not chunk:
                raise RuntimeError("the test server stopped")
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line.decode()

    def run(self, tests: list[str], timeout: float) -> tuple[str, float]:
        """``tests``: pytest arguments (files, ``--deselect ID``)."""
        assert self.proc.stdin is not None
        start = time.monotonic()
        self.proc.stdin.write(json.dumps(PYTEST_ARGS + tests).encode() + b"\n")
        self.proc.stdin.flush()
        child = int(self._line(None) or 0)
        code = self._line(start + timeout)
        if code is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child, signal.SIGKILL)
            self._line(None)
            return "timeout", time.monotonic() - start
        outcome = {0: "survived", 5: "empty"}.get(int(code), "killed")  # 5: none collected
        return outcome, time.monotonic() - start

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait()


def serve() -> int:
    """The server's side: each line read is a JSON list of pytest arguments, run in a forked
    child (its own process group, so a timeout kills what it started); the child's pid is
    written back, then its exit code."""
    import importlib
    import importlib.metadata

    import pytest

    # pytest's plugins too (a third of a small run's time); none is part of the tree
    for plugin in importlib.metadata.entry_points(group="pytest11"):
        with contextlib.suppress(Exception):
            importlib.import_module(plugin.module)
    sys.path[0] = str(Path.cwd())  # as ``python -m pytest`` has it, not this file's folder
    for line in sys.stdin:
        pid = os.fork()
        if pid == 0:  # pragma: no cover - leaves with os._exit
            os.setpgid(0, 0)
            quiet = os.open(os.devnull, os.O_WRONLY)
            os.dup2(quiet, 1)
            os.dup2(quiet, 2)
            code = 3
            try:
                code = int(pytest.main(json.loads(line)))
            finally:
                os._exit(code)
        print(pid, flush=True)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status), flush=True)
    return 0


Row = dict[str, object]


def _code(source: str, line: int) -> str:
    """The mutated line as written: with the description, what names a mutant for a reader
    (and for ``equivalent`` in the config) when the line numbers move."""
    lines = source.splitlines()
    return lines[line - 1].strip() if 0 < line <= len(lines) else ""


def _equivalent(entry: dict[str, object], row: Row) -> str | None:
    """Why ``row`` (a survivor) is an equivalent mutant, if the config says it is."""
    for known in entry.get("equivalent", []):  # type: ignore[attr-defined]
        if known["mutation"] == row["mutation"] and known["code"] == row.get("code"):
            return str(known["why"])
    return None


def _modules(config: dict[str, object]) -> dict[str, dict[str, object]]:
    return {str(e["path"]): e for e in config["module"]}  # type: ignore[attr-defined]


def render(results: dict[str, list[Row]], config: dict[str, object]) -> str:
    """A markdown table per module (killed / timeout / survived / equivalent, and the score
    over the mutants that are not equivalent), then the survivors not known equivalent."""
    entries = _modules(config)
    out = ["| module | mutants | killed | timeout | survived | equivalent | score | test time |",
           "|---|---|---|---|---|---|---|---|"]
    total = killed_all = equivalent_all = 0
    open_rows: list[str] = []
    for path, rows in results.items():
        count = {k: sum(r["outcome"] == k for r in rows) for k in ("killed", "timeout",
                                                                   "survived")}
        equivalent = sum(r["outcome"] == "survived"
                         and _equivalent(entries.get(path, {}), r) is not None for r in rows)
        seconds = sum(float(str(r["seconds"])) for r in rows)
        killed = count["killed"] + count["timeout"]
        total, killed_all = total + len(rows), killed_all + killed
        equivalent_all += equivalent
        out.append(f"| `{path}` | {len(rows)} | {count['killed']} | {count['timeout']} | "
                   f"{count['survived'] - equivalent} | {equivalent} | "
                   f"{_score(killed, len(rows) - equivalent)} | {seconds:.0f} s |")
        open_rows += [f"- `{path}:{r['line']}` {r['mutation']} (#{r.get('index', '?')}): "
                      f"`{r.get('code', '')}`" for r in rows
                      if r["outcome"] == "survived"
                      and _equivalent(entries.get(path, {}), r) is None]
    out.append(f"| all | {total} | | | {total - killed_all - equivalent_all} | "
               f"{equivalent_all} | {_score(killed_all, total - equivalent_all)} | |")
    out += ["", "Survivors not known equivalent:", ""] + (open_rows or ["- none"])
    return "\n".join(out) + "\n"


def _score(killed: int, counted: int) -> str:
    return f"{100 * killed / counted:.0f} %" if counted else "-"


def _first_file(tests: list[str]) -> list[str]:
    """``tests`` (files, then ``--deselect ID`` pairs and other arguments) cut to the first
    file: collecting every file (the doctor's six take most of a run) is wasted on a mutant
    that the first one kills."""
    count = next((n for n, t in enumerate(tests) if t.startswith("-")), len(tests))
    files, options = tests[:count], tests[count:]
    out = files[:1]
    n = 0
    while n < len(options):
        if options[n] == "--deselect" and n + 1 < len(options):
            if options[n + 1].split("::")[0] == files[0].split("::")[0]:
                out += options[n:n + 2]
            n += 2
        else:
            out.append(options[n])
            n += 1
    return out


_PASSED: set[tuple[str, ...]] = set()
"""The test arguments already seen passing on the unmutated tree in this run: the doctor's
modules share one set of files (a minute), checked once rather than once per module."""


def _run_module(tree: Path, entry: dict[str, object], picked: list[int], timeout: float,
                rows: list[Row]) -> None:
    """Runs the mutants ``picked`` (indices into ``mutants()`` of the module) and appends a
    row for each to ``rows``; the module's text is restored whatever happens."""
    path = str(entry["path"])
    target = tree / path
    original = target.read_text(encoding="utf-8")
    found = mutants(original)
    tests = [str(t) for t in entry["tests"]]  # type: ignore[attr-defined]
    for test_id in entry.get("deselect", []):  # type: ignore[attr-defined]
        tests += ["--deselect", str(test_id)]
    tests += [str(a) for a in entry.get("args", [])]  # type: ignore[attr-defined]
    first = _first_file(tests)
    runner = Runner(tree)
    if tuple(tests) not in _PASSED:
        outcome, seconds = runner.run(tests, timeout * 3)
        if outcome != "survived":
            print(f"{path}: the unmutated tree fails its tests ({outcome}); skipped",
                  flush=True)
            runner.close()
            return
        _PASSED.add(tuple(tests))
    try:
        for index in picked:
            line, description, text = found[index]
            target.write_text(text, encoding="utf-8")
            outcome, seconds = "survived", 0.0
            if first != tests:  # most mutants fail the first (fastest) file: collect it alone
                outcome, seconds = runner.run(first, timeout)
            if outcome in ("survived", "empty"):
                outcome, more = runner.run(tests, max(1.0, timeout - seconds))
                seconds += more
            outcome = "killed" if outcome == "empty" else outcome
            rows.append({"index": index, "line": line, "mutation": description,
                         "code": _code(original, line), "outcome": outcome,
                         "seconds": round(seconds, 1)})
            print(f"{path}:{line}: #{index} {description}: {outcome} ({seconds:.0f} s)",
                  flush=True)
    finally:
        target.write_text(original, encoding="utf-8")
        runner.close()


def _rerun(tree: Path, entries: dict[str, dict[str, object]], results: dict[str, list[Row]],
           timeout: float, only: list[str] | None) -> None:
    """Runs again, in place, every survivor of ``results`` not known equivalent (the same
    mutant, by index, checked to be the same change on the same code), e.g. after tests
    were added for them."""
    for path, rows in results.items():
        if only and path not in only:
            continue
        source = (tree / path).read_text(encoding="utf-8")
        found = mutants(source)
        survivors = {int(str(r["index"])): r for r in rows if r["outcome"] == "survived"
                     and _equivalent(entries[path], r) is None}
        if not survivors:
            continue
        for index, row in survivors.items():
            line, description, _ = found[index]
            if (description, _code(source, line)) != (row["mutation"], row["code"]):
                raise SystemExit(f"{path} #{index}: the code moved since the run; run it again")
        again: list[Row] = []
        _run_module(tree, entries[path], list(survivors),
                    float(entries[path].get("timeout_s", timeout)), again)  # type: ignore[arg-type]
        for new in again:
            survivors[int(str(new["index"]))].update(outcome=new["outcome"],
                                                    seconds=new["seconds"])


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--render", type=Path, help="print a result file as markdown, and stop")
    parser.add_argument("--tree", type=Path, help="a scratch checkout")
    parser.add_argument("--module", action="append", help="only these modules (repeatable)")
    parser.add_argument("--limit", type=int, default=0, help="at most N mutants per module")
    parser.add_argument("--every", type=int, default=0,
                        help="every N-th mutant (deterministic sample; default: config's)")
    parser.add_argument("--mutant", type=int, action="append",
                        help="only the mutant of this index (repeatable; one --module)")
    parser.add_argument("--list", action="store_true",
                        help="print the module's mutants (index, line, change), and stop")
    parser.add_argument("--show", type=int, help="print mutant N's changed line, and stop")
    parser.add_argument("--rerun", action="store_true",
                        help="run the survivors of --out again and update it in place")
    parser.add_argument("--out", type=Path, default=Path("mutation-result.json"))
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        return serve()
    # stopped by a signal, the module under test is still given back its own text
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    config = tomllib.loads((HERE / "config.toml").read_text(encoding="utf-8"))
    entries = _modules(config)
    if args.render:
        print(render(json.loads(args.render.read_text(encoding="utf-8")), config), end="")
        return 0
    if args.tree is None:
        parser.error("--tree is required")
    timeout = float(config.get("timeout_s", 300))
    if args.list or args.show is not None:
        for path in args.module or list(entries):
            source = (args.tree / path).read_text(encoding="utf-8")
            for index, (line, description, text) in enumerate(mutants(source)):
                if args.show is None:
                    print(f"{path} #{index} :{line} {description}: {_code(source, line)}")
                elif index == args.show:
                    print(f"{path}:{line} {description}\n- {_code(source, line)}\n"
                          f"+ {_code(text, line)}")
        return 0
    results: dict[str, list[Row]] = (json.loads(args.out.read_text(encoding="utf-8"))
                                     if args.out.exists() else {})
    started = time.monotonic()
    if args.rerun:
        _rerun(args.tree, entries, results, timeout, args.module)
        args.out.write_text(json.dumps(results, indent=1), encoding="utf-8")
        return 0
    if args.mutant and (not args.module or len(args.module) != 1):
        parser.error("--mutant needs exactly one --module")
    unknown = [m for m in args.module or [] if m not in entries]
    if unknown:
        parser.error(f"not in config.toml: {unknown}")
    for path in args.module or list(entries):  # in the order named: what matters most first
        entry = entries[path]
        count = len(mutants((args.tree / path).read_text(encoding="utf-8")))
        every = args.every or int(entry.get("every", config.get("every", 1)))  # type: ignore[call-overload]
        picked = args.mutant or list(range(count))[::every]
        if args.limit:
            picked = picked[:args.limit]
        rows: list[Row] = []
        _run_module(args.tree, entry, picked, float(entry.get("timeout_s", timeout)),  # type: ignore[arg-type]
                    rows)
        if args.mutant or (picked and not rows):  # by hand, or skipped: not kept
            continue
        results[path] = rows
        args.out.write_text(json.dumps(results, indent=1), encoding="utf-8")
    print(f"total {time.monotonic() - started:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
