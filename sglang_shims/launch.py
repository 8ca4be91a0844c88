"""``python -m sglang_shims.launch``: run sglang, a script or a module with the shims.

    python -m sglang_shims.launch [OPTIONS] [--] --model-path X --port 30000   # sglang
    python -m sglang_shims.launch [OPTIONS] [--] script.py ARGS...   # or a folder / zip
    python -m sglang_shims.launch [OPTIONS] [--] -m package.module ARGS...
    python -m sglang_shims.launch [OPTIONS] [--] -c CODE ARGS...

OPTIONS (only before the target; ``--`` ends them):
  --enable ID[,ID]    turn on patches that are off by default (SGLANG_SHIMS_ENABLE)
  --disable ID[,ID]   turn patches off (SGLANG_SHIMS_DISABLE)
  --strict            a failed, drifted or required-but-disabled patch stops the import
  --report-dir DIR    where every process writes its report (default: a new private
                      folder in <tmp>/sglang-shims-<uid>/, printed at start)
  --log LEVEL         debug | info | warning (SGLANG_SHIMS_LOG)
  -h, --help          this text (`launch -- --help` passes --help to sglang)

Options become ``SGLANG_SHIMS_*`` variables, so every child process inherits them.  The
shims are installed explicitly here, so this works where the ``.pth`` hook is never
processed (a ``pip install --target`` folder on ``PYTHONPATH``, ``python -S`` excepted);
then a bootstrap ``sitecustomize`` folder is put on ``PYTHONPATH`` so that spawned
children activate at start-up too.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

SGLANG_ENTRY = "sglang.launch_server"
SITE_DIR = Path(__file__).resolve().parent / "_launch_site"


HELP = (__doc__ or "").replace("``", "")
"""The module docstring as help: plain text, without its reST quotes."""


class UsageError(Exception):
    pass


@dataclass
class Plan:
    env: dict[str, str] = field(default_factory=dict)
    kind: str = "module"  # "module" | "script" | "code"
    target: str = SGLANG_ENTRY
    argv: list[str] = field(default_factory=list)
    help: bool = False


def _merge_ids(existing: str | None, new: str) -> str:
    return ",".join(x for x in ((existing or "").strip(), new.strip()) if x)


def parse(argv: Sequence[str], environ: dict[str, str] | None = None) -> Plan:
    """Split our options from the target; never consumes an argument it does not know."""
    environ = dict(os.environ) if environ is None else environ
    plan = Plan()
    args = list(argv)
    valued = {"--enable": "SGLANG_SHIMS_ENABLE", "--disable": "SGLANG_SHIMS_DISABLE",
              "--report-dir": "SGLANG_SHIMS_REPORT_DIR", "--log": "SGLANG_SHIMS_LOG"}
    while args:
        arg = args[0]
        name, eq, inline = arg.partition("=")
        if arg == "--":
            args.pop(0)
            break
        if arg in ("-h", "--help") and not plan.env:
            plan.help = True
            return plan
        if arg == "--strict":
            plan.env["SGLANG_SHIMS_STRICT"] = "1"
            args.pop(0)
            continue
        if name in valued:
            args.pop(0)
            if not eq:  # `--opt VALUE`; `--opt=` is an empty value and takes nothing more
                if not args:
                    raise UsageError(f"{name} needs a value")
                inline = args.pop(0)
            var = valued[name]
            if name in ("--enable", "--disable"):
                plan.env[var] = _merge_ids(plan.env.get(var, environ.get(var)), inline)
            elif not inline.strip():
                raise UsageError(f"{name} needs a value, not an empty one")
            else:
                plan.env[var] = inline
            continue
        break
    if args and args[0] == "-m":
        if len(args) < 2:
            raise UsageError("-m needs a module name")
        plan.kind, plan.target, plan.argv = "module", args[1], args[2:]
    elif args and args[0] == "-c":
        if len(args) < 2:
            raise UsageError("-c needs the code to run")
        plan.kind, plan.target, plan.argv = "code", args[1], args[2:]
    elif args and _names_a_program(args[0]):
        plan.kind, plan.target, plan.argv = "script", args[0], args[1:]
    else:
        plan.argv = args
    return plan


def _names_a_program(arg: str) -> bool:
    """Whether the first argument after our options is a program to run, as ``python ARG``
    would take it: a ``.py`` path, or an existing file or folder (a folder or zip with a
    ``__main__.py``).  Anything that starts with ``-`` is an option of sglang's, even one
    whose value ends in ``.py`` (``--chat-template=tpl.py``)."""
    if arg.startswith("-"):
        return False
    return arg.endswith(".py") or Path(arg).exists()


def carry_into_children(environ: dict[str, str] | os._Environ[str]) -> bool:
    """Make spawned children activate too; returns whether a bootstrap folder was added.

    Not needed where the .pth hook runs (children process it like we did).  Elsewhere
    the bootstrap ``sitecustomize`` folder goes first on ``PYTHONPATH``, with the folder
    that holds sglang_shims after it so that children can import us.
    """
    from . import _bootstrap

    if _bootstrap.active() in ("pth", "start", "launch-site"):
        return False
    package_parent = str(Path(__file__).resolve().parent.parent)
    entries = [p for p in environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    entries = [str(SITE_DIR), package_parent] + [
        p for p in entries if p not in (str(SITE_DIR), package_parent)]
    environ["PYTHONPATH"] = os.pathsep.join(entries)
    environ["SGLANG_SHIMS_LAUNCH_PREFIX"] = sys.prefix
    return True


def default_report_dir() -> tuple[Path, str | None]:
    """A new folder for this run's reports, and why the usual place was refused, if it was.

    The folder is made by ``mkdtemp`` (a name no one can guess, mode 0700) inside this
    user's ``<tmp>/sglang-shims-<uid>``, which must be ours alone: another user could
    otherwise pre-create the run folder and plant links in it, or lock us out.  When that
    user folder was made by someone else, the run folder goes straight into the temp dir
    instead (still private), and ``sglang-shims status`` needs it named.
    """
    import tempfile

    from . import _trust

    stamp = time.strftime("%Y%m%d-%H%M%S")
    root = _trust.user_folder()
    try:
        os.close(_trust.open_folder(root))
        return Path(tempfile.mkdtemp(prefix=f"{stamp}-", dir=root)), None
    except OSError as exc:
        run_dir = Path(tempfile.mkdtemp(prefix=f"{root.name}-{stamp}-"))
        return run_dir, (f"not using {root} ({exc}); this run's reports go to {run_dir},"
                         f" read them with `sglang-shims status --report-dir {run_dir}`")


def target_problem(plan: Plan) -> str | None:
    """One line naming why the target cannot run and what to do, or None when it can.

    Checked before running it, so that a missing sglang, a folder without ``__main__.py``
    or a binary file is this line rather than a runpy traceback.  Finding a module
    imports its parent packages, as runpy itself would; a parent that fails for another
    reason (a missing dependency of sglang) is left to raise its own error.
    """
    if plan.kind == "code":
        return None
    if plan.kind == "script":
        return _script_problem(Path(plan.target))
    import importlib.util

    try:
        found = importlib.util.find_spec(plan.target) is not None
    except ModuleNotFoundError as exc:
        name = exc.name or ""
        if not (plan.target == name or plan.target.startswith(name + ".")):
            return None
        found = False
    if found:
        return None
    if plan.target == SGLANG_ENTRY:
        return (f"sglang is not installed for {sys.executable}; install it (pip install "
                "sglang) or name what to run: a script, -m MODULE or -c CODE")
    return f"no module named {plan.target} for {sys.executable}"


def _script_problem(path: Path) -> str | None:
    """What ``python PATH`` would refuse, said before anything runs: nothing there, a
    folder or zip without ``__main__.py``, or a file that is not Python source."""
    if path.is_dir():
        if (path / "__main__.py").is_file():
            return None
        return (f"{path} is a folder without __main__.py: name a script in it, or run a"
                " package with -m PACKAGE")
    if not path.is_file():
        return f"no such script: {path}"
    import zipfile

    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            if "__main__.py" in archive.namelist():
                return None
        return f"{path} is a zip archive without __main__.py"
    try:
        with path.open("rb") as stream:
            head = stream.read(8192)
    except OSError as exc:
        return f"cannot read {path}: {exc.strerror}"
    if b"\0" in head:
        return f"{path} is not a Python script (it holds binary data)"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    try:
        plan = parse(sys.argv[1:] if argv is None else argv)
    except UsageError as exc:
        print(f"sglang-shims launch: {exc}\n\n{HELP}", file=sys.stderr)
        return 2
    if plan.help:
        print(HELP)
        return 0
    os.environ.update(plan.env)
    problem = _prepare_report_dir(os.environ)
    if problem:
        print(f"sglang-shims launch: {problem}", file=sys.stderr)
        return 2
    carry_into_children(os.environ)
    from . import engine as _engine

    _engine.install("launch")
    problem = target_problem(plan)
    run_dir = Path(os.environ["SGLANG_SHIMS_REPORT_DIR"])
    _record_launch(run_dir, plan, problem)
    if problem:
        print(f"sglang-shims launch: {problem}", file=sys.stderr)
        return 1
    import runpy

    if plan.kind == "code":
        sys.argv = ["-c", *plan.argv]
        sys.path.insert(0, "")
        exec(compile(plan.target, "<string>", "exec"), {"__name__": "__main__"})
    elif plan.kind == "script":
        sys.argv = [plan.target, *plan.argv]
        if Path(plan.target).is_file() and not plan.target.endswith(".zip"):
            # python puts a script's folder first; run_path does that itself for a
            # folder or zip it runs
            sys.path.insert(0, str(Path(plan.target).resolve().parent))
        runpy.run_path(plan.target, run_name="__main__")
    else:
        sys.argv = [plan.target, *plan.argv]
        runpy.run_module(plan.target, run_name="__main__", alter_sys=True)
    return 0


def _prepare_report_dir(environ: os._Environ[str]) -> str | None:
    """Settle the run's report folder before anything runs; a reason when it cannot be.

    A folder named by ``--report-dir`` or the environment is made absolute (a child that
    changes directory still finds it) and made or checked private now, so that a name
    that cannot be a folder is one line here rather than a warning in every process.
    Without one, a new private folder is made; one line says where the reports go and the
    command that reads them.
    """
    from . import _trust

    named = environ.get("SGLANG_SHIMS_REPORT_DIR", "").strip()
    if named:
        folder = Path(named).absolute()  # not resolve(): a link must stay a link
        try:
            os.close(_trust.open_folder(folder))
        except OSError as exc:
            reason = exc.strerror if exc.strerror and not isinstance(exc, _trust.NotPrivate) \
                else str(exc)
            return (f"cannot keep process reports in {folder}: {reason}; name a folder of"
                    " yours with --report-dir DIR")
        environ["SGLANG_SHIMS_REPORT_DIR"] = str(folder)
        hint = f"sglang-shims status --report-dir {folder}"
    else:
        folder, refused = default_report_dir()
        environ["SGLANG_SHIMS_REPORT_DIR"] = str(folder)
        if refused:
            print(f"sglang-shims: {refused}", file=sys.stderr)
        hint = f"sglang-shims status --report-dir {folder}" if refused else "sglang-shims status"
    print(f"sglang-shims: process reports go to {folder}; `{hint}` summarises them",
          file=sys.stderr)
    return None


LAUNCH_RECORD = "launch.json"
"""The launcher's own record in the run folder, beside the processes' ``<pid>.json``:
what was launched, and why it did not start when it did not (``sglang-shims status``
says so instead of judging a run that never ran)."""


def _record_launch(run_dir: Path, plan: Plan, problem: str | None) -> None:
    import json

    from . import _trust

    record = {"schema": 1, "pid": os.getpid(), "time": time.time(), "kind": plan.kind,
              "target": plan.target, "argv": plan.argv, "failed": problem}
    try:
        _trust.write_file(run_dir, LAUNCH_RECORD, json.dumps(record).encode())
    except OSError:
        pass  # the folder was checked a moment ago; a report of ours is never fatal


if __name__ == "__main__":
    raise SystemExit(main())
