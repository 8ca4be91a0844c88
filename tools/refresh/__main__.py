"""``python -m tools.refresh``: regenerate, check or canary the repository's data.

    python -m tools.refresh                 # regenerate everything but the hours-long runs
    python -m tools.refresh release-index   # one generator (``--list`` names them)
    python -m tools.refresh --offline       # only what the repository alone decides
    python -m tools.refresh --check         # offline, seconds: is every file current?
    python -m tools.refresh --new           # the canary: what is new on the index, and
                                            # what it breaks (a dated report)

``--index none --find-links DIR`` reads releases from a folder of wheels instead of the
package index (the recorded snapshot stands for the index): the walkthrough in
docs/maintaining.md is tested that way, without the network.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from . import canary, ledger
from .context import Context, log
from .registry import GENERATORS, PENDING, Generator, by_name


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m tools.refresh",
                                     description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("targets", nargs="*", metavar="TARGET", help="generators to run"
                        " (default: all but the measured ones)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="verify offline; exit 1 if"
                      " any file is not what its generator wrote")
    mode.add_argument("--new", action="store_true", help="the canary: list what the index"
                      " has beyond the recorded snapshot, run the matrix cells it changes,"
                      " write a dated report")
    mode.add_argument("--list", action="store_true", help="the generators, their kind,"
                      " outputs and source")
    parser.add_argument("--offline", action="store_true", help="regenerate only the files"
                        " derived from the repository")
    parser.add_argument("--adopt", action="store_true", help="stamp the named generators'"
                        " current outputs as theirs without regenerating (files their own"
                        " command wrote, e.g. a matrix run)")
    parser.add_argument("--index", default=Context.index, help="package index (PEP 691"
                        " simple API), or 'none': the recorded snapshot stands for it")
    parser.add_argument("--find-links", action="append", type=Path, default=[],
                        metavar="DIR", help="a folder of wheels listed beside the index")
    parser.add_argument("--git", type=Path, help="a clone of sglang (kernel versions the"
                        " index no longer has are read from it; default: kept as recorded)")
    parser.add_argument("--wheel-cache", type=Path, help="kernel wheels already downloaded")
    parser.add_argument("--jobs", type=int, default=1, help="matrix cells run at once")
    parser.add_argument("--releases", help="canary: the sglang releases whose cells run"
                        " for a new dependency (comma-separated, or 'all'; default: a"
                        " spread)")
    parser.add_argument("--no-cells", action="store_true", help="canary: list and report"
                        " without running matrix cells")
    parser.add_argument("--report-dir", type=Path, help="canary: where the report goes"
                        " (default: docs/canary)")
    return parser


def check(generators: list[Generator], context: Context) -> int:
    failed = 0
    for generator in generators:
        started = time.monotonic()
        outputs = [context.root / rel for rel in generator.outputs(context)]
        problems = generator.check(context)
        if generator.kind != "derived":
            problems += ledger.problems(generator.name, generator.version, outputs)
        notes = generator.stale(context) if generator.stale else []
        took = f"{time.monotonic() - started:.1f} s"
        if problems:
            failed += 1
            print(f"{generator.name}: STALE ({took}); run `python -m tools.refresh"
                  f" {generator.name}`")
            for line in problems:
                print(f"  {line}")
        else:
            print(f"{generator.name}: ok ({len(outputs)} file(s), {took})")
        for line in notes:
            print(f"  note: {line}")
    return 1 if failed else 0


def regenerate(generators: list[Generator], context: Context, named: bool,
               offline: bool) -> int:
    for generator in generators:
        if offline and generator.kind != "derived":
            continue
        if generator.kind == "measured" and not named:
            log(f"{generator.name}: measured (hours); run `python -m tools.refresh"
                f" {generator.name}` to redo it")
            continue
        started = time.monotonic()
        log(f"{generator.name}: regenerating")
        generator.regenerate(context)
        if generator.kind != "derived":
            outputs = [context.root / rel for rel in generator.outputs(context)]
            ledger.stamp(generator.name, generator.version, generator.source, context.date,
                         outputs)
        log(f"{generator.name}: done in {time.monotonic() - started:.0f} s")
    return 0


def listing() -> int:
    context = Context()
    for generator in GENERATORS:
        print(f"{generator.name} ({generator.kind}, v{generator.version}): "
              f"{', '.join(generator.outputs(context))}\n  from {generator.source}")
    for name, what in PENDING.items():
        print(f"{name} (not registered yet): {what}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.list:
        return listing()
    context = Context(index=args.index, find_links=[p.resolve() for p in args.find_links],
                      git=args.git, wheel_cache=args.wheel_cache, jobs=args.jobs)
    if args.new:
        return canary.main(context, releases=args.releases, cells=not args.no_cells,
                           report_dir=args.report_dir)
    try:
        generators = by_name(args.targets)
    except KeyError as exc:
        _parser().error(str(exc.args[0]))
    if args.check:
        return check(generators, context)
    if args.adopt:
        if not args.targets:
            _parser().error("--adopt needs the generators named")
        for generator in generators:
            outputs = [context.root / rel for rel in generator.outputs(context)]
            ledger.stamp(generator.name, generator.version, generator.source, context.date,
                         outputs)
        return 0
    return regenerate(generators, context, named=bool(args.targets), offline=args.offline)


if __name__ == "__main__":
    sys.exit(main())
