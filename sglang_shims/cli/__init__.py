"""``sglang-shims``: explain the environment and the patches, check them, launch sglang.

Every command prints aligned tables for people and, with ``--json``, one JSON document
for programs.  Exit codes: 0 all good; 1 the command found a problem (``check``: a
drifted patch; ``doctor``: a failing check; ``status``: a failed or drifted patch, or
processes that disagree); 2 usage error (unknown command, option or patch id).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from . import render as _table

EXIT_OK, EXIT_PROBLEM, EXIT_USAGE = 0, 1, 2


def _emit(args: argparse.Namespace, data: Any, text: str) -> None:
    if args.json:
        print(json.dumps(data, indent=2, sort_keys=False, default=str))
    else:
        print(text)


def _warnings_text(warnings: list[str]) -> str:
    return "".join(f"\nwarning: {w}" for w in warnings)


def cmd_list(args: argparse.Namespace) -> int:
    from .survey import survey

    result = survey()
    if args.markdown:
        from .docs import patches_markdown

        print(patches_markdown(result), end="")
        return EXIT_OK
    rows = [(v.manifest.id, v.judged.state, v.judged.reason or "-", v.manifest.summary)
            for v in result.views]
    text = _table.render(["id", "state", "reason", "summary"], rows, max_width=70)
    data = {"patches": [v.as_dict() for v in result.views], "warnings": result.warnings()}
    _emit(args, data, text + _warnings_text(result.warnings()))
    return EXIT_OK


def cmd_explain(args: argparse.Namespace) -> int:
    from .survey import survey

    result = survey()
    views = {v.manifest.id: v for v in result.views}
    view = views.get(args.id.lower())
    if view is None:
        print(f"sglang-shims: unknown patch {args.id!r}; known ids: {', '.join(sorted(views))}",
              file=sys.stderr)
        return EXIT_USAGE
    data = view.as_dict(full=True)
    m = view.manifest
    lines = [f"{m.id}: {m.summary}", "",
             f"state:     {view.judged.state} -- {view.judged.reason}",
             f"enabled:   {'yes' if view.enabled else 'no'} ({view.toggle});"
             f" default {data['default']}, policy {m.policy}",
             f"target:    {m.target} ({m.when} its body runs)",
             "evidence:  " + "\n           ".join(m.evidence), "", "gates:"]
    lines += [f"  {g.label} {g.spec or '(installed)'}" for g in m.requires] or ["  (none)"]
    lines += [f"  gpu capability {m.gpu}"] if m.gpu else []
    lines += ["  -> " + line for line in view.judged.gates]
    lines += ["", f"retire when: {m.retire.description}"]
    lines += ["  -> " + line for line in view.judged.retire]
    lines += ["", "fingerprints:"] + [f"  {fp.describe()}" for fp in m.fingerprints]
    lines += ["  -> " + line for line in view.judged.fingerprints] or ["  (none)"]
    lines += ["", "what it changes:", "  " + " ".join(m.changes.split())]
    if m.range_note:
        lines += ["", "how the range was established:", "  " + " ".join(m.range_note.split())]
    if data["code"]:
        lines += ["", f"code: {data['code']}"]
    _emit(args, data, "\n".join(lines))
    return EXIT_OK


def cmd_check(args: argparse.Namespace) -> int:
    from .survey import survey

    result = survey(ignore_toggles=True)
    checked = [v for v in result.views if v.judged.state in ("would-apply", "drifted")]
    drifted = [v for v in checked if v.judged.state == "drifted"]
    rows = [(v.manifest.id, "drifted" if v in drifted else "ok",
             v.judged.reason if v in drifted else "; ".join(v.judged.fingerprints) or "-")
            for v in checked]
    skipped = [(v.manifest.id, v.judged.state, v.judged.reason)
               for v in result.views if v not in checked]
    text = _table.render(["id", "fingerprint", "detail"], rows, max_width=90) if rows else \
        "no patch applies to this environment"
    if skipped:
        text += "\n\nnot checked (they would not act here):\n" + _table.render(
            ["id", "state", "reason"], skipped, max_width=90)
    text += f"\n\n{len(drifted)} drifted, {len(checked) - len(drifted)} ok"
    data = {"checked": [{"id": v.manifest.id, "state": v.judged.state,
                         "fingerprints": v.judged.fingerprints,
                         "reason": v.judged.reason} for v in checked],
            "skipped": [{"id": i, "state": s, "reason": r} for i, s, r in skipped],
            "drifted": [v.manifest.id for v in drifted]}
    _emit(args, data, text)
    return EXIT_PROBLEM if drifted else EXIT_OK


def cmd_status(args: argparse.Namespace) -> int:
    from . import status as _status

    directory = _status.resolve_dir(args.report_dir)
    if directory is None:
        print("sglang-shims: no report directory: pass --report-dir DIR, set"
              " SGLANG_SHIMS_REPORT_DIR, or start sglang with `sglang-shims launch`",
              file=sys.stderr)
        return EXIT_USAGE
    summary = _status.aggregate(directory)
    _emit(args, summary.as_dict(), summary.text())
    return EXIT_PROBLEM if summary.problems else EXIT_OK


def cmd_doctor(args: argparse.Namespace) -> int:
    from .doctor.report import doctor

    findings, data = doctor(probe_import=not args.no_probe)
    rows = [(f.level.upper(), f.check, f.detail, f.remedy or "-") for f in findings]
    text = _table.render(["level", "check", "detail", "remedy"], rows, max_width=80)
    _emit(args, data, text)
    return EXIT_PROBLEM if any(f.level == "fail" for f in findings) else EXIT_OK


def cmd_fingerprint(args: argparse.Namespace) -> int:
    from ..engine import source as _source

    module, _, qualname = args.target.partition(":")
    path = _source.locate(module)
    if path is None:
        print(f"sglang-shims: cannot find the source of {module}", file=sys.stderr)
        return EXIT_USAGE
    data: dict[str, Any] = {"module": module, "file": str(path)}
    if qualname:
        data["function"] = qualname
        data["sha256"] = _source.function_hash(path.read_text(encoding="utf-8"), qualname)
        if data["sha256"] is None:
            print(f"sglang-shims: {module} defines no {qualname}", file=sys.stderr)
            return EXIT_USAGE
    _emit(args, data, "\n".join(f"{k}: {v}" for k, v in data.items()))
    return EXIT_OK


def cmd_launch(args: argparse.Namespace) -> int:
    from ..launch import main as launch_main

    return launch_main(args.rest)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sglang-shims", description=__doc__.split("\n\n")[0],
        epilog="exit codes: 0 ok; 1 a problem was found; 2 usage error")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.add_argument("--json", action="store_true", help="print one JSON document")
        return p

    p = add("list", "every shipped patch and what it would do here")
    p.add_argument("--markdown", action="store_true", help="render docs/patches.md")
    p.set_defaults(func=cmd_list)
    p = add("explain", "one patch in full: manifest, gates, fingerprints, retire rule")
    p.add_argument("id")
    p.set_defaults(func=cmd_explain)
    add("check", "verify every applicable patch's fingerprint against the installed source"
        ).set_defaults(func=cmd_check)
    p = add("status", "what each process did, from the report directory")
    p.add_argument("--report-dir", help="default: $SGLANG_SHIMS_REPORT_DIR or the last launch")
    p.set_defaults(func=cmd_status)
    p = add("doctor", "diagnose this environment: versions, GPU, kernel ABI and arch, patches")
    p.add_argument("--no-probe", action="store_true",
                   help="do not try importing sgl_kernel in a subprocess")
    p.set_defaults(func=cmd_doctor)
    p = add("fingerprint", "print a module's file and a function's source hash (for manifests)")
    p.add_argument("target", metavar="MODULE[:QUALNAME]")
    p.set_defaults(func=cmd_fingerprint)
    p = sub.add_parser("launch", help="run sglang (or a script / module) with the shims",
                       add_help=False)
    p.add_argument("rest", nargs=argparse.REMAINDER)
    p.set_defaults(func=cmd_launch, json=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code: int = args.func(args)
    except BrokenPipeError:  # `sglang-shims list | head`
        return EXIT_OK
    return code


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
