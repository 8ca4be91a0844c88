"""``python -m sglang_shims.launch``: run sglang, a script or a module with the shims.

    python -m sglang_shims.launch [OPTIONS] [--] --model-path X --port 30000   # sglang
    python -m sglang_shims.launch [OPTIONS] [--] script.py ARGS...
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
            if not eq:
                if not args:
                    raise UsageError(f"{name} needs a value")
                inline = args.pop(0)
            var = valued[name]
            if name in ("--enable", "--disable"):
                plan.env[var] = _merge_ids(plan.env.get(var, environ.get(var)), inline)
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
    elif args and (args[0].endswith(".py") or Path(args[0]).is_file()):
        plan.kind, plan.target, plan.argv = "script", args[0], args[1:]
    else:
        plan.argv = args
    return plan


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


def missing_target(plan: Plan) -> str | None:
    """One line naming what is not there and what to do, or None when the target exists.

    Checked before running it, so that a missing sglang is this line rather than a
    runpy traceback.  Finding a module imports its parent packages, as runpy itself
    would; a parent that fails for another reason (a missing dependency of sglang) is
    left to raise its own error.
    """
    if plan.kind == "code":
        return None
    if plan.kind == "script":
        return None if Path(plan.target).is_file() else f"no such script: {plan.target}"
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
    if not os.environ.get("SGLANG_SHIMS_REPORT_DIR", "").strip():
        run_dir, refused = default_report_dir()
        os.environ["SGLANG_SHIMS_REPORT_DIR"] = str(run_dir)
        if refused:
            print(f"sglang-shims: {refused}", file=sys.stderr)
    print(f"sglang-shims: process reports go to {os.environ['SGLANG_SHIMS_REPORT_DIR']};"
          " `sglang-shims status` summarises them", file=sys.stderr)
    carry_into_children(os.environ)
    from . import engine as _engine

    _engine.install("launch")
    missing = missing_target(plan)
    if missing:
        print(f"sglang-shims launch: {missing}", file=sys.stderr)
        return 1
    import runpy

    if plan.kind == "code":
        sys.argv = ["-c", *plan.argv]
        sys.path.insert(0, "")
        exec(compile(plan.target, "<string>", "exec"), {"__name__": "__main__"})
    elif plan.kind == "script":
        sys.argv = [plan.target, *plan.argv]
        sys.path.insert(0, str(Path(plan.target).resolve().parent))
        runpy.run_path(plan.target, run_name="__main__")
    else:
        sys.argv = [plan.target, *plan.argv]
        runpy.run_module(plan.target, run_name="__main__", alter_sys=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
