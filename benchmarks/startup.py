"""Interpreter start-up cost of the .pth hook, and of the first import of a watched module.

Two fresh venvs of the same interpreter: one with sglang-shims installed from a wheel,
one without.  Runs alternate between them (order shuffled each round) so that drift
of the machine hits both alike; the figure of merit is the ratio of the 10th
percentiles (the least disturbed runs).

    python benchmarks/startup.py [--rounds 200] [--wheel dist/sglang_shims-*.whl]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
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
    # what any .pth costs: one import line that imports nothing
    "bare": 'import os; os.environ.get("X_BENCH", "") == "0"\n',
    # what importing the smallest two-module package costs
    "package": 'import os; __import__("bench_pkg.boot").boot.activate()\n',
}


PIP_ARGS: list[str] = []
"""Extra arguments for pip (``--pip-args "--no-index --find-links DIR"`` on an offline box)."""


def make_venv(root: Path, wheel: Path | None, reference: str | None = None) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    python = root / "bin" / "python"
    if reference is not None:
        site = next((root / "lib").glob("python*/site-packages"))
        (site / "bench.pth").write_text(REFERENCE_PTH[reference])
        if reference == "package":
            (site / "bench_pkg").mkdir()
            (site / "bench_pkg" / "__init__.py").write_text("")
            (site / "bench_pkg" / "boot.py").write_text("def activate():\n    pass\n")
    if wheel is not None:
        subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q",
                        "--disable-pip-version-check", *PIP_ARGS, str(wheel)], check=True)
    # compile what is there, as pip does for installed packages
    subprocess.run([str(python), "-m", "compileall", "-q", str(root / "lib")], check=False)
    return python


def build_wheel(out: Path) -> Path:
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out),
                    str(REPO)], check=True)
    return next(out.glob("sglang_shims-*.whl"))


CPU: dict[str, list[float]] = {}
"""CPU time (user + system) of each run, per command: much less disturbed than wall time
when the machine is shared, since waiting for a core is not counted."""


def time_runs(commands: dict[str, list[str]], rounds: int, env: dict[str, dict[str, str]]
              ) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {name: [] for name in commands}
    names = list(commands)
    for _ in range(rounds):
        random.shuffle(names)
        for name in names:
            start = time.perf_counter()
            child = subprocess.Popen(commands[name], env=env[name], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
            _, status, usage = os.wait4(child.pid, 0)
            child.returncode = os.waitstatus_to_exitcode(status)
            times[name].append((time.perf_counter() - start) * 1000)
            if child.returncode:
                raise SystemExit(f"{name}: exit {child.returncode}")
            CPU.setdefault(name, []).append((usage.ru_utime + usage.ru_stime) * 1000)
    return times


def base_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SGLANG_SHIMS", "PYTHON"))}
    env.update(extra)
    return env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--wheel", type=Path)
    parser.add_argument("--pip-args", default="", help="extra pip arguments, one string")
    args = parser.parse_args()
    PIP_ARGS.extend(args.pip_args.split())
    from sglang_shims.testing import standin

    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        wheel = args.wheel or build_wheel(tmp / "dist")
        with_shims = make_venv(tmp / "with", wheel)
        without = make_venv(tmp / "without", None)
        bare_pth = make_venv(tmp / "bare-pth", None, "bare")
        package_pth = make_venv(tmp / "package-pth", None, "package")
        kernel = standin.build("0.3.18", tmp / "kernel")
        meta = tmp / "kernel" / "sglang-0.5.1.dist-info"
        meta.mkdir()
        (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: sglang\nVersion: 0.5.1\n")

        extra = tmp / "extra"
        (extra / "demo-extra").mkdir(parents=True)
        (extra / "demo-extra" / "manifest.toml").write_text(
            'id = "demo-extra"\n[target]\nmodule = "json.decoder"\n')
        extra.chmod(0o700)
        start = time_runs(
            {"bare venv": [str(without), "-c", "pass"],
             "with sglang-shims": [str(with_shims), "-c", "pass"],
             "with sglang-shims, SGLANG_SHIMS=0": [str(with_shims), "-c", "pass"],
             "with sglang-shims, SGLANG_SHIMS_PATH set": [str(with_shims), "-c", "pass"],
             "reference: a .pth line importing nothing": [str(bare_pth), "-c", "pass"],
             "reference: a .pth importing an empty two-module package":
                 [str(package_pth), "-c", "pass"]},
            args.rounds,
            {"bare venv": base_env(), "with sglang-shims": base_env(),
             "with sglang-shims, SGLANG_SHIMS=0": base_env(SGLANG_SHIMS="0"),
             "with sglang-shims, SGLANG_SHIMS_PATH set": base_env(SGLANG_SHIMS_PATH=str(extra)),
             "reference: a .pth line importing nothing": base_env(),
             "reference: a .pth importing an empty two-module package": base_env()})
        kernel_env = {"PYTHONPATH": str(kernel)}
        first = {}
        for label, preload in (("cold", ""), ("stdlib already loaded", PRELOAD)):
            code = (f"import time, sys\n{preload}\nt = time.perf_counter()\nimport sgl_kernel\n"
                    "sys.stdout.write(str((time.perf_counter() - t) * 1000))")
            for name, env in (("shims on", base_env(**kernel_env)),
                              ("shims on, SGLANG_SHIMS_PATH set",
                               base_env(SGLANG_SHIMS_PATH=str(extra), **kernel_env)),
                              ("SGLANG_SHIMS=0", base_env(SGLANG_SHIMS="0", **kernel_env))):
                first[f"{label}, {name}"] = [
                    float(subprocess.run([str(with_shims), "-c", code], env=env, check=True,
                                         capture_output=True, text=True).stdout)
                    for _ in range(max(20, args.rounds // 10))]

        wake: dict[str, list[float]] = {"wake_ms": [], "judge_ms": []}
        report = tmp / "reports"
        code = f"import sys\n{PRELOAD}\nimport sgl_kernel\n"
        for _ in range(max(20, args.rounds // 10)):
            env = base_env(SGLANG_SHIMS_REPORT_DIR=str(report), **kernel_env)
            done = subprocess.run([str(with_shims), "-c", code], env=env, check=True,
                                  capture_output=True, text=True)
            files = list(report.glob("*.json"))
            if not files:
                raise SystemExit(f"no report written: {done.stderr}")
            timing = json.loads(files[0].read_text())["timing"]
            files[0].unlink()
            for key, values in wake.items():
                values.append(timing[key])

    print(f"date: {time.strftime('%Y-%m-%d')}; machine: {platform.machine()}, "
          f"{os.cpu_count()} CPUs, Python {platform.python_version()}; rounds: {args.rounds}")
    print("\n| `python -c pass` | p10 ms | median ms | ratio to bare (p10) | (median) |")
    print("|---|---|---|---|---|")
    base = percentile(start["bare venv"], 0.1)
    base_median = statistics.median(start["bare venv"])
    for name, values in start.items():
        p10, median = percentile(values, 0.1), statistics.median(values)
        print(f"| {name} | {p10:.2f} | {median:.2f} | {p10 / base:.3f} |"
              f" {median / base_median:.3f} |")
    print("\n| `python -c pass`, CPU time (user + system) | median ms | ratio to bare |")
    print("|---|---|---|")
    cpu_base = statistics.median(CPU["bare venv"])
    for name, values in CPU.items():
        print(f"| {name} | {statistics.median(values):.2f} |"
              f" {statistics.median(values) / cpu_base:.3f} |")
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
