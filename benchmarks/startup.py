"""Interpreter start-up cost of the .pth hook, and of the first import of a watched module.

Fresh venvs of the same interpreter: one with sglang-shims installed from a wheel, one
without, and two references: a ``.pth`` whose line only does ``import sys`` (the floor: what
any ``.pth`` line costs) and one that imports an empty top-level module (the floor of a hook
whose code lives in a module, as ours does).  Each round runs every command once, in a
shuffled order, so that drift of the machine hits all alike.  The figure of merit is CPU
time (user + system of the child, from ``wait4``: waiting for a core is not counted, which
matters on a shared machine): the ratio of the medians to the bare venv's, and the median of
the per-round ratios (each run paired with the bare venv's run of the same round).
``--before WHEEL`` measures a second wheel in the same rounds (e.g. main's), so that before
and after see the same machine.  ``--instructions`` adds what no load disturbs: the
instructions each command executes, counted once under valgrind (``callgrind``; fixed hash
seed), which leaves out the kernel's share (page faults, system calls).

    python benchmarks/startup.py [--rounds 400] [--wheel dist/sglang_shims-*.whl]
                                 [--before OLD.whl] [--start-only] [--instructions]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


# What a real sglang process has imported (through torch and sglang itself) before it
# first imports sgl_kernel; the engine's own imports beyond these are its real cost.
PRELOAD = ("import logging, json, dataclasses, typing, subprocess, shutil, threading, ast, "
           "inspect, re, hashlib, textwrap, importlib.util, importlib.metadata, "
           "email.parser, zipfile, tomllib")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


REFERENCE_PTH = {
    # the floor: what any .pth line costs (site reads the file, compiles and runs the line)
    "floor": "import sys\n",
    # what any hook whose code lives in a module costs before running any of it
    "module": "import _bench_empty\n",
}


PIP_ARGS: list[str] = []
"""Extra arguments for pip (``--pip-args "--no-index --find-links DIR"`` on an offline box)."""


def make_venv(root: Path, wheel: Path | None, reference: str | None = None) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    python = root / "bin" / "python"
    if reference is not None:
        site = next((root / "lib").glob("python*/site-packages"))
        (site / "bench.pth").write_text(REFERENCE_PTH[reference])
        if reference == "module":
            (site / "_bench_empty.py").write_text("")
    if wheel is not None:
        subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q",
                        "--disable-pip-version-check", *PIP_ARGS, str(wheel)], check=True)
    # compile what is there, as pip does for installed packages
    subprocess.run([str(python), "-m", "compileall", "-q", str(root / "lib")], check=False)
    return python


def build_wheel(out: Path, tree: Path = REPO) -> Path:
    # without build isolation where hatchling is installed here: no network needed
    no_isolation = ["--no-build-isolation"] if importlib.util.find_spec("hatchling") else []
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", *no_isolation, "-q",
                    "-w", str(out), str(tree)], check=True)
    return next(out.glob("sglang_shims-*.whl"))


def time_runs(commands: dict[str, list[str]], rounds: int, env: dict[str, dict[str, str]]
              ) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Wall and CPU milliseconds of each command, one run of each per round, shuffled."""
    wall: dict[str, list[float]] = {name: [] for name in commands}
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    names = list(commands)
    for _ in range(rounds):
        random.shuffle(names)
        for name in names:
            start = time.perf_counter()
            child = subprocess.Popen(commands[name], env=env[name], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
            _, status, usage = os.wait4(child.pid, 0)
            wall[name].append((time.perf_counter() - start) * 1000)
            if os.waitstatus_to_exitcode(status):
                raise SystemExit(f"{name}: exit {os.waitstatus_to_exitcode(status)}")
            cpu[name].append((usage.ru_utime + usage.ru_stime) * 1000)
    return wall, cpu


def base_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SGLANG_SHIMS", "PYTHON"))}
    env.update(extra)
    return env


BARE = "bare venv"


def instructions(commands: dict[str, list[str]], env: dict[str, dict[str, str]]
                 ) -> dict[str, int]:
    """Instructions executed by each command (user space), counted by callgrind."""
    counts = {}
    for name, command in commands.items():
        done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                               *command], env={**env[name], "PYTHONHASHSEED": "0"},
                              capture_output=True, text=True, check=True)
        counts[name] = int(re.search(r"Collected : (\d+)", done.stderr)[1])  # type: ignore[index]
    return counts


def start_up(tmp: Path, wheel: Path, before: Path | None, extra: Path
             ) -> tuple[dict[str, list[str]], dict[str, dict[str, str]]]:
    """``python -c pass`` in each venv, and its environment."""
    with_shims = make_venv(tmp / "with", wheel)
    pythons = {BARE: make_venv(tmp / "without", None),
               "reference: a .pth line `import sys` (the floor)":
                   make_venv(tmp / "floor-pth", None, "floor"),
               "reference: a .pth importing an empty module":
                   make_venv(tmp / "module-pth", None, "module"),
               "with sglang-shims": with_shims,
               "with sglang-shims, `SGLANG_SHIMS=0`": with_shims,
               "with sglang-shims, `SGLANG_SHIMS_PATH` set": with_shims}
    envs = {name: base_env() for name in pythons}
    envs["with sglang-shims, `SGLANG_SHIMS=0`"] = base_env(SGLANG_SHIMS="0")
    envs["with sglang-shims, `SGLANG_SHIMS_PATH` set"] = base_env(SGLANG_SHIMS_PATH=str(extra))
    if before is not None:
        pythons["with sglang-shims, the --before wheel"] = make_venv(tmp / "before", before)
        envs["with sglang-shims, the --before wheel"] = base_env()
    return {name: [str(python), "-c", "pass"] for name, python in pythons.items()}, envs


def first_import(tmp: Path, python: Path, kernel: Path, extra: Path, rounds: int
                 ) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """The first ``import sgl_kernel`` timed in-process, and the report's wake timing."""
    kernel_env = {"PYTHONPATH": str(kernel)}
    first: dict[str, list[float]] = {}
    for label, preload in (("cold", ""), ("stdlib already loaded", PRELOAD)):
        code = (f"import time, sys\n{preload}\nt = time.perf_counter()\nimport sgl_kernel\n"
                "sys.stdout.write(str((time.perf_counter() - t) * 1000))")
        for name, env in (("shims on", base_env(**kernel_env)),
                          ("shims on, `SGLANG_SHIMS_PATH` set",
                           base_env(SGLANG_SHIMS_PATH=str(extra), **kernel_env)),
                          ("`SGLANG_SHIMS=0`", base_env(SGLANG_SHIMS="0", **kernel_env))):
            first[f"{label}, {name}"] = [
                float(subprocess.run([str(python), "-c", code], env=env, check=True,
                                     capture_output=True, text=True).stdout)
                for _ in range(max(20, rounds // 10))]
    wake: dict[str, list[float]] = {"wake_ms": [], "judge_ms": []}
    report = tmp / "reports"
    code = f"import sys\n{PRELOAD}\nimport sgl_kernel\n"
    for _ in range(max(20, rounds // 10)):
        env = base_env(SGLANG_SHIMS_REPORT_DIR=str(report), **kernel_env)
        done = subprocess.run([str(python), "-c", code], env=env, check=True,
                              capture_output=True, text=True)
        files = list(report.glob("*.json"))
        if not files:
            raise SystemExit(f"no report written: {done.stderr}")
        timing = json.loads(files[0].read_text())["timing"]
        files[0].unlink()
        for key, values in wake.items():
            values.append(timing[key])
    return first, wake


def print_start_up(wall: dict[str, list[float]], cpu: dict[str, list[float]]) -> None:
    print("\n| `python -c pass`, CPU time (user + system) | median ms | ratio of medians"
          " | median of paired ratios |")
    print("|---|---|---|---|")
    base = statistics.median(cpu[BARE])
    for name, values in cpu.items():
        paired = statistics.median(v / b for v, b in zip(values, cpu[BARE], strict=True))
        print(f"| {name} | {statistics.median(values):.2f} |"
              f" **{statistics.median(values) / base:.3f}** | {paired:.3f} |")
    print("\n| `python -c pass`, wall time | p10 ms | median ms | ratio to bare (p10) | (median) |")
    print("|---|---|---|---|---|")
    p10, median = percentile(wall[BARE], 0.1), statistics.median(wall[BARE])
    for name, values in wall.items():
        print(f"| {name} | {percentile(values, 0.1):.2f} | {statistics.median(values):.2f} |"
              f" {percentile(values, 0.1) / p10:.3f} | {statistics.median(values) / median:.3f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=400)
    parser.add_argument("--wheel", type=Path)
    parser.add_argument("--before", type=Path, help="a second wheel, measured in the same rounds")
    parser.add_argument("--start-only", action="store_true",
                        help="only `python -c pass`, not the first watched import")
    parser.add_argument("--instructions", action="store_true",
                        help="also count each command's instructions under valgrind")
    parser.add_argument("--pip-args", default="", help="extra pip arguments, one string")
    args = parser.parse_args()
    PIP_ARGS.extend(args.pip_args.split())
    from sglang_shims.testing import standin

    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        wheel = args.wheel or build_wheel(tmp / "dist")
        extra = tmp / "extra"
        (extra / "demo-extra").mkdir(parents=True)
        (extra / "demo-extra" / "manifest.toml").write_text(
            'id = "demo-extra"\n[target]\nmodule = "json.decoder"\n')
        extra.chmod(0o700)
        commands, envs = start_up(tmp, wheel, args.before, extra)
        wall, cpu = time_runs(commands, args.rounds, envs)
        load_after = os.getloadavg()
        if args.instructions and not shutil.which("valgrind"):
            raise SystemExit("--instructions needs valgrind")
        counted = instructions(commands, envs) if args.instructions else {}
        if not args.start_only:
            kernel = standin.build("0.3.18", tmp / "kernel")
            meta = tmp / "kernel" / "sglang-0.5.1.dist-info"
            meta.mkdir()
            (meta / "METADATA").write_text(
                "Metadata-Version: 2.1\nName: sglang\nVersion: 0.5.1\n")
            first, wake = first_import(tmp, tmp / "with" / "bin" / "python", kernel, extra,
                                       args.rounds)

    print(f"date: {time.strftime('%Y-%m-%d')}; machine: {platform.machine()}, "
          f"{os.cpu_count()} CPUs, Python {platform.python_version()}; rounds: {args.rounds};"
          f" load average (1 min) {load_before[0]:.1f} before, {load_after[0]:.1f} after")
    print_start_up(wall, cpu)
    if counted:
        print("\n| `python -c pass`, instructions (callgrind) | millions | ratio to bare |")
        print("|---|---|---|")
        for name, count in counted.items():
            print(f"| {name} | {count / 1e6:.2f} | **{count / counted[BARE]:.3f}** |")
    if args.start_only:
        return
    print("\n| first `import sgl_kernel` (stand-in 0.3.18, sglang 0.5.1 metadata), timed "
          "in-process | p10 ms | median ms |")
    print("|---|---|---|")
    for name, values in first.items():
        print(f"| {name} | {percentile(values, 0.1):.2f} | {statistics.median(values):.2f} |")
    print("\n| the report's `timing` (stdlib already loaded, first `import sgl_kernel`) |"
          " p10 ms | median ms |")
    print("|---|---|---|")
    for name, values in wake.items():
        print(f"| {name} | {percentile(values, 0.1):.2f} | {statistics.median(values):.2f} |")


if __name__ == "__main__":
    main()
