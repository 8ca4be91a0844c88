"""The ``sglang-shims`` command: explain the environment and the patches, check them, launch.

Every command prints text for people and, with ``--json``, one JSON document for
programs (with a ``schema`` key; errors stay plain text on stderr, as pip does).
Exit codes are :class:`ExitCode`.  ``launch`` is handed its arguments untouched,
before argparse sees them, so that it parses exactly as ``python -m sglang_shims.launch``.
"""

from __future__ import annotations

import argparse
import enum
import json
import sys
import traceback
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from . import render as _render

if TYPE_CHECKING:
    from .survey import PatchView

SCHEMA = 1
"""Version of every ``--json`` document; raised on a change that breaks a reader."""
ISSUES_URL = "https://github.com/sglang-shims/sglang-shims/issues"
DESCRIPTION = ("Import-time compatibility patches for SGLang: diagnose this environment, "
               "list and explain the patches, check their fingerprints, summarise a run, "
               "start a new patch, and launch sglang with the shims.")


class ExitCode(enum.IntEnum):
    """What the command's exit status means (the scheme ruff and pytest use)."""

    OK = 0
    PROBLEM = 1
    """The command worked and found a problem: a drifted or failed patch, a failing
    doctor check, processes that disagree, no reports to judge."""
    USAGE = 2
    """Unknown command, option or patch id."""
    INTERNAL = 3
    """A bug in sglang-shims itself; the message asks for a report."""


def version() -> str:
    from importlib import metadata

    try:
        return metadata.version("sglang-shims")
    except metadata.PackageNotFoundError:  # a checkout on sys.path, not installed
        return "unknown (not installed)"


def _emit(args: argparse.Namespace, data: dict[str, Any], text: str) -> None:
    if args.json:
        print(json.dumps({"schema": SCHEMA, **data}, indent=2, default=str))
    else:
        print(text)


def _style(args: argparse.Namespace) -> _render.Style:
    return _render.Style(not args.json and _render.should_colour(sys.stdout))


def _warnings_text(warnings: list[str]) -> str:
    return "".join(f"\nwarning: {w}" for w in warnings)


def known_patch(text: str) -> str:
    """argparse ``type=`` for a patch id: a bad one is a usage error that names the nearest
    known id (a typo, as the toggles' warnings do), else lists the known ids."""
    import difflib

    from .._bootstrap import env
    from ..catalog.load import load

    ids = sorted(load(env("SGLANG_SHIMS_PATH")).by_id())
    wanted = text.strip().lower()
    if wanted in ids:
        return wanted
    near = difflib.get_close_matches(wanted, ids, n=1, cutoff=0.75) if len(wanted) < 200 else []
    if near:
        raise argparse.ArgumentTypeError(f"unknown patch {text!r}; did you mean {near[0]}? "
                                         f"(`sglang-shims list` shows all {len(ids)} ids)")
    raise argparse.ArgumentTypeError(f"unknown patch {text!r}; known ids: {', '.join(ids)}")


def cmd_list(args: argparse.Namespace) -> int:
    from .survey import survey

    result = survey()
    if args.markdown:
        from .docs import patches_markdown

        print(patches_markdown(result), end="")
        return ExitCode.OK
    rows = [(v.manifest.id, v.judged.state, v.judged.reason or "-", v.manifest.summary)
            for v in result.views]
    text = _render.table(["id", "state", "reason", "summary"], rows, wrap={2}, trim={3},
                         style=_style(args), colours=[{}, _render.STATE_COLOUR])
    data = {"patches": [v.as_dict() for v in result.views], "warnings": result.warnings(),
            "not_loaded": dict(result.catalog.errors)}
    _emit(args, data, text + _warnings_text(result.warnings()))
    return _not_loaded_exit(result.catalog.errors)


def _not_loaded_exit(errors: dict[str, str]) -> int:
    """A patch folder that could not be loaded is a problem for every command that lists
    patches: it would never apply, and a script gating on the exit code must see that."""
    return ExitCode.PROBLEM if errors else ExitCode.OK


def cmd_explain(args: argparse.Namespace) -> int:
    from .survey import survey

    view = next(v for v in survey().views if v.manifest.id == args.id)
    data = view.as_dict(full=True)
    m = view.manifest
    lines = [f"{m.id}: {m.summary}", "",
             f"state:     {view.judged.state} -- {view.judged.reason}",
             f"enabled:   {'yes' if view.enabled else 'no'} ({view.toggle});"
             f" default {data['default']}, policy {m.policy}",
             f"target:    {m.target} ({m.when} its body runs)",
             "evidence:  " + "\n           ".join(m.evidence), "", "gates:"]
    gates = [f"  {g.label} {g.spec or '(installed)'}" for g in m.requires]
    gates += [f"  gpu capability {m.gpu}"] if m.gpu else []
    lines += gates or ["  (none)"]
    lines += ["  -> " + line for line in view.judged.gates]
    lines += ["", f"retire when: {m.retire.description}"]
    lines += ["  -> " + line for line in view.judged.retire]
    lines += ["", "fingerprints:"]
    if not m.fingerprints:
        lines.append("  (none)")
    lines += [f"  {fp.describe()}" for fp in m.fingerprints]
    lines += ["  -> " + line for line in view.judged.fingerprints]
    if m.fingerprints and not view.judged.fingerprints:
        lines.append("  -> not checked here (the patch would not act)")
    lines += ["", "what it changes:", *_render.paragraph(data["changes"])]
    if data["range"]:
        lines += ["", "how the range was established:", *_render.paragraph(data["range"])]
    if data["code"]:
        lines += ["", f"code: {data['code']}"]
    _emit(args, data, "\n".join(lines))
    return ExitCode.OK


def cmd_check(args: argparse.Namespace) -> int:
    from .survey import survey

    result = survey(ignore_toggles=True)
    checked = [v for v in result.views if v.judged.state in ("would-apply", "drifted")]
    drifted = [v for v in checked if v.judged.state == "drifted"]
    rows = [(v.manifest.id, "drifted" if v in drifted else "ok",
             (v.judged.reason if v in drifted else "; ".join(v.judged.fingerprints) or "-")
             + _off_note(v)) for v in checked]
    skipped = [(v.manifest.id, v.judged.state, v.judged.reason + _off_note(v))
               for v in result.views if v not in checked]
    style = _style(args)
    colours = [{}, {"drifted": "red", "ok": "green"}]
    text = (_render.table(["id", "fingerprint", "detail"], rows, wrap={2}, style=style,
                          colours=colours) if rows else "no patch applies to this environment")
    if skipped:
        text += "\n\nnot checked (they would not act here):\n" + _render.table(
            ["id", "state", "reason"], skipped, wrap={2}, style=style)
    errors = result.catalog.errors
    if errors:
        text += "\n\nnot loaded (they can never apply):\n" + _render.table(
            ["folder", "why"], sorted(errors.items()), wrap={1}, style=style)
    text += (f"\n\n{len(drifted)} drifted, {len(checked) - len(drifted)} ok"
             + (f", {len(errors)} not loaded" if errors else ""))
    data = {"checked": [{"id": v.manifest.id, "state": v.judged.state,
                         "fingerprints": v.judged.fingerprints,
                         "reason": v.judged.reason, "enabled": v.enabled} for v in checked],
            "skipped": [{"id": v.manifest.id, "state": v.judged.state,
                         "reason": v.judged.reason, "enabled": v.enabled}
                        for v in result.views if v not in checked],
            "drifted": [v.manifest.id for v in drifted], "not_loaded": dict(errors)}
    _emit(args, data, text)
    return ExitCode.PROBLEM if drifted or errors else ExitCode.OK


def _off_note(view: PatchView) -> str:
    """What ``list`` says of a patch that is off, said where ``check`` judges it anyway
    (``check`` ignores the toggles), so the two commands agree on why it does not act."""
    if view.enabled:
        return ""
    by = "by default" if view.toggle == "default" else f"by {view.toggle}"
    return f" (off {by}; checked as if enabled)"


def cmd_status(args: argparse.Namespace) -> int:
    from . import status as _status

    directory = _status.resolve_dir(args.report_dir)
    if directory is None:
        # Nothing to judge is a failed gate, not a misuse of the command.
        print("sglang-shims: no report directory: pass --report-dir DIR, set"
              " SGLANG_SHIMS_REPORT_DIR, or start sglang with `sglang-shims launch`",
              file=sys.stderr)
        return ExitCode.PROBLEM
    summary = _status.aggregate(directory)
    _emit(args, summary.as_dict(), summary.text())
    return ExitCode.PROBLEM if summary.problems else ExitCode.OK


def _announce(message: str) -> None:
    """Progress on stderr, only for a person watching (pip and uv do the same)."""
    if sys.stderr.isatty():
        print(message, file=sys.stderr, flush=True)


def cmd_doctor(args: argparse.Namespace) -> int:
    from .doctor.report import doctor

    findings, data = doctor(probe_import=not args.no_probe, announce=_announce,
                            model_path=args.model_path)
    style = _style(args)
    width = _render.terminal_width()
    text = "\n\n".join(
        _render.block(f.level.upper(), f.check, [("", f.detail), ("fix: ", f.remedy)],
                      width=width, style=style, colour=_render.LEVEL_COLOUR.get(f.level))
        for f in findings)
    counts = {level: sum(f.level == level for f in findings) for level in ("fail", "warn")}
    text += f"\n\n{counts['fail']} failing, {counts['warn']} warnings, {len(findings)} checks"
    _emit(args, data, text)
    return ExitCode.PROBLEM if counts["fail"] else ExitCode.OK


def cmd_fingerprint(args: argparse.Namespace) -> int:
    from ..engine import source as _source

    module, _, qualname = args.target.partition(":")
    path = _source.locate(module)
    if path is None:
        print(f"sglang-shims: cannot find the source of {module}", file=sys.stderr)
        return ExitCode.PROBLEM
    data: dict[str, Any] = {"module": module, "file": str(path)}
    if qualname:
        data["function"] = qualname
        data["sha256"] = _source.function_hash(path.read_text(encoding="utf-8"), qualname)
        if data["sha256"] is None:
            print(f"sglang-shims: {module} defines no {qualname}", file=sys.stderr)
            return ExitCode.PROBLEM
    _emit(args, data, "\n".join(f"{k}: {v}" for k, v in data.items()))
    return ExitCode.OK


def cmd_new(args: argparse.Namespace) -> int:
    from pathlib import Path

    from . import new as _new

    try:
        data = _new.create(args.id, args.target, args.when,
                           None if args.folder is None else Path(args.folder),
                           None if args.tests is None else Path(args.tests))
    except _new.Refused as exc:
        print(f"sglang-shims new: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    _emit(args, data, _new.text(data))
    return ExitCode.OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sglang-shims", description=DESCRIPTION,
        epilog="exit codes: 0 ok; 1 a problem was found; 2 usage error; 3 internal error "
               "(please report it)")
    parser.add_argument("--version", action="version", version=f"sglang-shims {version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.add_argument("--json", action="store_true", help="print one JSON document")
        return p

    p = add("list", "every shipped patch and what it would do here")
    p.add_argument("--markdown", action="store_true", help="render docs/patches.md")
    p.set_defaults(func=cmd_list)
    p = add("explain", "one patch in full: manifest, gates, fingerprints, retire rule")
    p.add_argument("id", type=known_patch, metavar="ID")
    p.set_defaults(func=cmd_explain)
    add("check", "verify every applicable patch's fingerprint against the installed source"
        ).set_defaults(func=cmd_check)
    p = add("status", "what each process did, from the report directory")
    p.add_argument("--report-dir", help="default: $SGLANG_SHIMS_REPORT_DIR or the last launch")
    p.set_defaults(func=cmd_status)
    p = add("doctor", "diagnose this environment: versions, GPU, kernel ABI and arch, patches")
    p.add_argument("--no-probe", action="store_true",
                   help="do not try importing sgl_kernel in a subprocess")
    p.add_argument("--model-path", metavar="PATH",
                   help="a model folder (config.json): which sgl_kernel ops it reaches and "
                        "whether the Triton fallback provides them")
    p.set_defaults(func=cmd_doctor)
    p = add("fingerprint", "print a module's file and a function's source hash (for manifests)")
    p.add_argument("target", metavar="MODULE[:QUALNAME]")
    p.set_defaults(func=cmd_fingerprint)
    p = add("new", "start a patch: its folder (manifest, patch.py, README) and a test")
    p.add_argument("id", metavar="ID", help="the patch id (lower-case, '-' and '.')")
    p.add_argument("--target", required=True, metavar="MODULE",
                   help="the module whose import runs the patch")
    p.add_argument("--when", choices=("before", "after"), default="after",
                   help="run before or after the target's body (default: after)")
    p.add_argument("--folder", metavar="DIR",
                   help="where the patch folder goes (default: patches)")
    p.add_argument("--tests", metavar="DIR",
                   help="where its test goes (default: tests/patches)")
    p.set_defaults(func=cmd_new)
    # Listed for --help only: main() hands `launch ...` to the launcher before argparse.
    sub.add_parser("launch", help="run sglang (or a script / module) with the shims; "
                                  "`sglang-shims launch --help` for its options")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list[:1] == ["launch"]:
        from ..launch import main as launch_main

        return launch_main(args_list[1:])
    parser = build_parser()
    args = parser.parse_args(args_list)
    try:
        code: int = args.func(args)
    except BrokenPipeError:  # `sglang-shims list | head`
        return ExitCode.OK
    except Exception:
        traceback.print_exc()
        print(f"sglang-shims {version()}: internal error in `{args.command}` (the traceback"
              f" above); please report it at {ISSUES_URL} with this output",
              file=sys.stderr)
        return ExitCode.INTERNAL
    return int(code)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
