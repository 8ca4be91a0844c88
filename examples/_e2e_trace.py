"""Reading ``e2e_serve.py --step-trace``: on which side each slow decode step was slow.

The trace is written inside the server by ``examples/step_trace/sitecustomize.py`` (one
row per ``ModelRunner.forward`` call, see there) and, beside it, ``nvidia-smi`` samples
the GPU's clocks, power and throttle reasons every 100 ms.  Everything here is pure so
that ``tests/scripts/test_step_trace.py`` checks it on CPU.

A step is the time from one decode call of the timed batch to the next.  It is *slow*
when it takes more than ``factor`` x the batch's median step.  Slow and other steps are
then compared part by part: the GPU time of the step's forward work, the GPU's idle gap
before the next step, the scheduler thread's CPU time and the process's garbage
collection in that step, and the SM clock sampled nearest to it.  The verdict says which
part carries the slow steps' extra time:

* ``gpu``: the forward work itself took longer on the GPU (its clock is the next
  question);
* ``host``: the GPU waited for the host (the gap grew); ``cpu_ms`` then says whether the
  scheduler thread was busy for that time or not running (a CUDA synchronisation spins, so
  waiting on the GPU counts as busy too).

``host_ms`` is the time the scheduler spent inside the forward call on the host (inputs
prepared, graph replay enqueued).  It is the part that varies between servers of one stack
(2026-12-05, H200: 0.37-0.66 ms for the same code), and it decides whether a step is bound by
the GPU (gap ~0.02 ms) or by the host.  ``gpu_ms`` counts from the call's start on the GPU,
so where the host is slower than the GPU it includes the GPU waiting for the rest of the
call's work: compare the stacks' GPU time on servers whose host kept up.

Run as a script on a trace folder (``python examples/_e2e_trace.py FOLDER --reps N``) it
prints the summary again, with the timed runs found from the rows themselves (runs older
than the ``trace_windows`` that ``e2e_serve.py`` now saves).
"""

from __future__ import annotations

import itertools
import json
import statistics
import subprocess
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

SMI_FIELDS = ("timestamp", "clocks.sm", "clocks.mem", "power.draw", "temperature.gpu",
              "utilization.gpu", "clocks_event_reasons.active")
"""What ``nvidia-smi`` samples; the last one is named ``clocks_throttle_reasons.active``
by drivers before 535, so :func:`smi_command` has a shorter fallback."""
PARTS = ("step_ms", "gpu_ms", "gap_ms", "host_ms", "cpu_ms", "gc_ms", "sm_mhz", "power_w")
"""What :func:`summarize` compares between slow and other steps."""


def smi_command(fields: tuple[str, ...] = SMI_FIELDS) -> list[str]:
    return ["nvidia-smi", f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits",
            "-lms", "100"]


def start_smi(path: Path) -> subprocess.Popen[bytes] | None:
    """``nvidia-smi`` sampling into ``path``, or None where it cannot run; a driver that
    does not know the throttle-reason field gets the sample without it."""
    for fields in (SMI_FIELDS, SMI_FIELDS[:-1]):
        try:
            proc = subprocess.Popen(smi_command(fields), stdout=path.open("wb"),
                                    stderr=subprocess.DEVNULL)
        except OSError:
            return None
        try:
            proc.wait(1.0)
        except subprocess.TimeoutExpired:
            return proc  # still sampling: the fields are known
    return None


def read_steps(folder: Path) -> list[list[Any]]:
    """The rows of the process that ran the decode steps (the most of them: with tensor
    parallelism every rank writes its own file)."""
    best: list[list[Any]] = []
    for path in sorted(folder.glob("steps-*.jsonl")):
        rows = []
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
            except ValueError:
                continue  # a line cut short when the server was stopped
            if isinstance(row, list) and len(row) in (8, 9):  # 8: before the core was kept
                rows.append(row)
        if sum(r[5] for r in rows) > sum(r[5] for r in best):
            best = rows
    return best


def read_smi(path: Path) -> list[tuple[float, float, float]]:
    """``(time, SM MHz, watts)`` per sample, in time order (unreadable lines skipped)."""
    out: list[tuple[float, float, float]] = []
    if not path.is_file():
        return out
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        cells = [c.strip() for c in line.split(",")]
        try:
            when = datetime.strptime(cells[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
            out.append((when, float(cells[1]), float(cells[3])))
        except (ValueError, IndexError):
            continue
    return sorted(out)


def _nearest(smi: list[tuple[float, float, float]], when: float, within: float = 0.25
             ) -> tuple[float, float] | None:
    best = min(smi, key=lambda s: abs(s[0] - when), default=None)
    if best is None or abs(best[0] - when) > within:
        return None
    return best[1], best[2]


Step = dict[str, float | None]
"""One step's parts (:data:`PARTS`); ``step_ms`` is always there, the others may be None."""


def step_parts(rows: list[list[Any]], batch: int, begin: float, end: float,
               smi: list[tuple[float, float, float]]) -> list[Step]:
    """Each decode step of ``batch`` requests that started in ``[begin, end]``, taken
    apart (see the module's docstring); the last call of the window ends no step."""
    calls = [r for r in rows if r[5] == 1 and r[4] == batch and begin <= r[0] <= end]
    steps: list[Step] = []
    for here, after in itertools.pairwise(calls):
        sample = _nearest(smi, here[0])
        steps.append({"step_ms": 1e3 * (after[0] - here[0]),
                      "gpu_ms": here[6], "gap_ms": after[7], "host_ms": here[1],
                      "cpu_ms": 1e3 * (after[2] - here[2]),
                      "gc_ms": 1e3 * (after[3] - here[3]),
                      "sm_mhz": sample[0] if sample else None,
                      "power_w": sample[1] if sample else None,
                      "core": here[8] if len(here) > 8 else None})
    return steps


def _median(steps: list[Step], part: str) -> float | None:
    values = [v for s in steps if (v := s[part]) is not None]
    return round(statistics.median(values), 3) if values else None


def _stretches(flags: list[bool]) -> int:
    return sum(1 for slow, _ in itertools.groupby(flags) if slow)


def verdict(slow: dict[str, float | None], other: dict[str, float | None]) -> str:
    """``gpu`` when at least half of the slow steps' extra time is extra GPU work,
    ``host`` otherwise; ``none`` without slow steps, ``unknown`` without GPU times."""
    step, base = slow.get("step_ms"), other.get("step_ms")
    if step is None or base is None:
        return "none"
    gpu, gpu_base = slow.get("gpu_ms"), other.get("gpu_ms")
    if gpu is None or gpu_base is None:
        return "unknown"
    return "gpu" if gpu - gpu_base >= 0.5 * (step - base) else "host"


def summarize(rows: list[list[Any]], windows: list[tuple[int, float, float]],
              smi: list[tuple[float, float, float]], factor: float = 1.5
              ) -> dict[str, dict[str, Any]]:
    """Per batch size (the windows are the timed requests: batch, wall-clock begin and
    end): steps, slow steps and the stretches they form, the medians of every part for
    slow and for other steps, and the verdict."""
    by_batch: dict[int, list[list[Step]]] = {}
    for batch, begin, end in windows:
        by_batch.setdefault(batch, []).append(step_parts(rows, batch, begin, end, smi))
    out: dict[str, dict[str, Any]] = {}
    for batch, runs in by_batch.items():
        steps = [s for run in runs for s in run]
        if not steps:
            out[str(batch)] = {"steps": 0}
            continue
        limit = factor * statistics.median(_ms(s) for s in steps)
        flags = [[_ms(s) > limit for s in run] for run in runs]
        marked = list(zip(steps, itertools.chain.from_iterable(flags), strict=True))
        slow = [s for s, is_slow in marked if is_slow]
        other = [s for s, is_slow in marked if not is_slow]
        medians = {"slow": {p: _median(slow, p) for p in PARTS},
                   "other": {p: _median(other, p) for p in PARTS}}
        out[str(batch)] = {"steps": len(steps), "slow_steps": len(slow),
                           "stretches": sum(_stretches(f) for f in flags), **medians,
                           "verdict": verdict(medians["slow"], medians["other"]),
                           "cores": {"slow": _cores(slow), "other": _cores(other)}}
    return out


def _cores(steps: list[Step]) -> dict[str, int]:
    """How many of ``steps`` the scheduler started on each CPU (traces that kept it)."""
    return dict(Counter(str(int(core)) for s in steps if (core := s.get("core")) is not None)
                .most_common())


def _ms(step: Step) -> float:
    return step["step_ms"] or 0.0


def _cell(value: Any) -> str:
    return "-" if value is None else f"{value:g}"


def table(servers: dict[str, dict[str, Any]]) -> list[str]:
    """Markdown rows: per server and batch, slow against other steps, part by part."""
    if not servers:
        return []
    head = " | ".join(f"{p} slow / other" for p in PARTS)
    lines = ["| server | batch | steps | slow (stretches) | " + head + " | verdict |",
             "|" + "---|" * (5 + len(PARTS))]
    for name, batches in servers.items():
        for batch, got in batches.items():
            if not got.get("steps"):
                lines.append(f"| {name} | {batch} | 0 |" + " - |" * (len(PARTS) + 2))
                continue
            parts = " | ".join(f"{_cell(got['slow'][p])} / {_cell(got['other'][p])}"
                               for p in PARTS)
            lines.append(f"| {name} | {batch} | {got['steps']} | {got['slow_steps']}"
                         f" ({got['stretches']}) | {parts} | {got['verdict']} |")
    return lines


def windows_from_rows(rows: list[list[Any]], reps: int, idle_s: float = 0.05,
                      min_calls: int = 32) -> list[tuple[int, float, float]]:
    """The timed runs, found from the rows alone: per batch size, runs of decode calls no
    more than ``idle_s`` apart and at least ``min_calls`` long; the last ``reps`` of each
    batch size (``e2e_serve.py`` warms every batch size up before it times any)."""
    runs: dict[int, list[list[list[Any]]]] = {}
    for row in (r for r in rows if r[5] == 1):
        batch_runs = runs.setdefault(row[4], [])
        if batch_runs and row[0] - batch_runs[-1][-1][0] <= idle_s:
            batch_runs[-1].append(row)
        else:
            batch_runs.append([row])
    out = []
    for batch, found in runs.items():
        long = [run for run in found if len(run) >= min_calls]
        out += [(batch, run[0][0], run[-1][0]) for run in long[-reps:]]
    return sorted(out, key=lambda w: w[1])


def regimes(steps: list[Step], limit_ms: float) -> str:
    """The steps' host time as runs of fast (``f``, below ``limit_ms``) and slow (``s``)
    steps, e.g. ``s25 f36 s1``: whether a server's host was slow for a stretch or for its
    whole life."""
    flags = ("f" if (s["host_ms"] or 0.0) < limit_ms else "s" for s in steps)
    return " ".join(f"{flag}{len(list(run))}" for flag, run in itertools.groupby(flags))


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description="summarise a --step-trace folder")
    parser.add_argument("folder", type=Path, nargs="+")
    parser.add_argument("--reps", type=int, default=2, help="timed runs per batch size")
    parser.add_argument("--host-limit", type=float, default=0.44,
                        help="host ms inside the forward call above which a step is 'slow host'")
    args = parser.parse_args(argv)
    for folder in args.folder:
        rows, smi = read_steps(folder), read_smi(folder / "smi.csv")
        windows = windows_from_rows(rows, args.reps)
        got = summarize(rows, windows, smi)
        for batch, *_ in windows:
            steps = [s for b, begin, end in windows if b == batch
                     for s in step_parts(rows, b, begin, end, smi)]
            got[str(batch)]["all"] = {p: _median(steps, p) for p in PARTS}
            got[str(batch)]["host_regimes"] = regimes(steps, args.host_limit)
        print(json.dumps({folder.name: got}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
