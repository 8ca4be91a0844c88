"""Waking up: from the first watched import to every patch judged, per process.

Each run is a fresh interpreter of a venv with sglang-shims installed from a wheel; it
imports what an sglang process has already imported by then (``startup.PRELOAD``), then
``sgl_kernel`` (a stand-in 0.3.18 beside sglang 0.5.1 metadata), and the report's
``timing`` is read back: ``wake_ms`` + ``judge_ms`` is the goal's figure (<= 5 ms),
``wake_cpu_ms`` + ``judge_cpu_ms`` the same spans in CPU time of the importing thread,
steadier than wall time on a shared machine.  The patches' own work (their ``apply``) is
in neither.

``--site DIR`` appends a real ``site-packages`` to ``sys.path`` in each run (e.g. a venv
with torch and sglang's dependencies): the version gates then read a full environment's
metadata, as in a real sglang process.  ``--warm-metadata`` first asks
``importlib.metadata`` for every entry point, as importing torch (>= 2.5: its device
back-ends) does in every sglang process before ``sgl_kernel``: the gates' version look-ups
then find the folder listings cached, as they would there.  ``--importtime`` adds the median
``-X importtime`` self time of each of our modules (from separate runs: importtime slows
what it measures).

    python benchmarks/wake.py [--rounds 40] [--wheel dist/sglang_shims-*.whl] [--site DIR]
                              [--warm-metadata] [--importtime]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from startup import PRELOAD, base_env, build_wheel, make_venv, percentile

SPANS = ("wake_ms", "judge_ms", "wake_cpu_ms", "judge_cpu_ms")


def run_once(python: Path, code: str, env: dict[str, str], reports: Path,
             importtime: bool) -> tuple[dict[str, float], str]:
    flags = ["-X", "importtime"] if importtime else []
    done = subprocess.run([str(python), *flags, "-c", code], env=env, capture_output=True,
                          text=True, check=True)
    files = list(reports.glob("*.json"))
    if len(files) != 1:
        raise SystemExit(f"expected one report, found {len(files)}: {done.stderr[-2000:]}")
    timing: dict[str, float] = json.loads(files[0].read_text())["timing"]
    files[0].unlink()
    return timing, done.stderr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--wheel", type=Path)
    parser.add_argument("--site", type=Path, help="a site-packages to append to sys.path")
    parser.add_argument("--warm-metadata", action="store_true",
                        help="importlib.metadata.entry_points() first, as torch's import does")
    parser.add_argument("--importtime", action="store_true")
    args = parser.parse_args()
    from sglang_shims.testing import standin

    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        python = make_venv(tmp / "venv", args.wheel or build_wheel(tmp / "dist"))
        kernel = standin.build("0.3.18", tmp / "kernel")
        meta = kernel / "sglang-0.5.1.dist-info"
        meta.mkdir()
        (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: sglang\nVersion: 0.5.1\n")
        reports = tmp / "reports"
        env = base_env(SGLANG_SHIMS_REPORT_DIR=str(reports), PYTHONPATH=str(kernel))
        extra = f"import sys\nsys.path.append({str(args.site)!r})\n" if args.site else ""
        warm = "importlib.metadata.entry_points()\n" if args.warm_metadata else ""
        code = f"{extra}{PRELOAD}\n{warm}import sgl_kernel\n"
        spans: dict[str, list[float]] = {name: [] for name in (*SPANS, "total", "total_cpu")}
        for _ in range(args.rounds):
            timing, _ = run_once(python, code, env, reports, importtime=False)
            for name in SPANS:
                if name in timing:  # the CPU spans are absent from older releases' reports
                    spans[name].append(timing[name])
            spans["total"].append(timing["wake_ms"] + timing["judge_ms"])
            if "wake_cpu_ms" in timing:
                spans["total_cpu"].append(timing["wake_cpu_ms"] + timing["judge_cpu_ms"])
        selfs: dict[str, list[float]] = {}
        for _ in range(args.rounds if args.importtime else 0):
            _, stderr = run_once(python, code, env, reports, importtime=True)
            for line in stderr.splitlines():
                found = re.match(r"import time:\s+(\d+) \|\s+\d+ \|\s*(sglang_shims\S*)", line)
                if found:
                    selfs.setdefault(found[2], []).append(int(found[1]) / 1000)

    load = os.getloadavg()[0]
    print(f"date: {time.strftime('%Y-%m-%d')}; machine: {platform.machine()}, "
          f"{os.cpu_count()} CPUs, load average {load:.1f}, Python {platform.python_version()};"
          f" rounds: {args.rounds}; site: {args.site or 'the venv only'};"
          f" metadata {'warm' if args.warm_metadata else 'cold'}")
    print("\n| first `import sgl_kernel`, the report's `timing` | p10 ms | median ms |")
    print("|---|---|---|")
    labels = {"total": "**wake + judge** (the goal's figure)",
              "total_cpu": "**wake + judge, CPU time**"}
    for name, values in ((n, v) for n, v in spans.items() if v):
        print(f"| {labels.get(name, name)} | {percentile(values, 0.1):.2f} |"
              f" {statistics.median(values):.2f} |")
    if selfs:
        print("\n| our module (`-X importtime`, self) | median ms |")
        print("|---|---|")
        for name, values in sorted(selfs.items(), key=lambda kv: -statistics.median(kv[1])):
            print(f"| `{name}` | {statistics.median(values):.2f} |")


if __name__ == "__main__":
    sys.exit(main())
