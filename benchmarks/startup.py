"""Interpreter start-up cost of the .pth hook, and of the first import of a watched module.

Two fresh venvs of the same interpreter: one with sglang-shims installed from a wheel,
one without.  Runs alternate between them (order shuffled each round) so that drift
of the machine hits both alike; the figure of merit is the ratio of the 10th
percentiles (the least disturbed runs).

    python benchmarks/startup.py [--rounds 200] [--wheel dist/sglang_shims-*.whl]
"""

from __future__ import annotations

import argparse
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


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def make_venv(root: Path, wheel: Path | None) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    python = root / "bin" / "python"
    if wheel is not None:
        subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q",
                        "--disable-pip-version-check", str(wheel)], check=True)
    # compile what is there, as pip does for installed packages
    subprocess.run([str(python), "-m", "compileall", "-q", str(root / "lib")], check=False)
    return python


def build_wheel(out: Path) -> Path:
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out),
                    str(REPO)], check=True)
    return next(out.glob("sglang_shims-*.whl"))


def time_runs(commands: dict[str, list[str]], rounds: int, env: dict[str, dict[str, str]]
              ) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {name: [] for name in commands}
    names = list(commands)
    for _ in range(rounds):
        random.shuffle(names)
        for name in names:
            start = time.perf_counter()
            subprocess.run(commands[name], env=env[name], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            times[name].append((time.perf_counter() - start) * 1000)
    return times


def base_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SGLANG_SHIMS", "PYTHON"))}
    env.update(extra)
    return env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--wheel", type=Path)
    args = parser.parse_args()
    from sglang_shims.testing import standin

    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        wheel = args.wheel or build_wheel(tmp / "dist")
        with_shims = make_venv(tmp / "with", wheel)
        without = make_venv(tmp / "without", None)
        kernel = standin.build("0.3.18", tmp / "kernel")
        meta = tmp / "kernel" / "sglang-0.5.1.dist-info"
        meta.mkdir()
        (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: sglang\nVersion: 0.5.1\n")

        start = time_runs(
            {"bare venv": [str(without), "-c", "pass"],
             "with sglang-shims": [str(with_shims), "-c", "pass"],
             "with sglang-shims, SGLANG_SHIMS=0": [str(with_shims), "-c", "pass"]},
            args.rounds,
            {"bare venv": base_env(), "with sglang-shims": base_env(),
             "with sglang-shims, SGLANG_SHIMS=0": base_env(SGLANG_SHIMS="0")})
        watched = [str(with_shims), "-c", "import sgl_kernel"]
        kernel_env = {"PYTHONPATH": str(kernel)}
        first = time_runs(
            {"shims on": watched, "SGLANG_SHIMS=0": watched},
            max(20, args.rounds // 4),
            {"shims on": base_env(**kernel_env),
             "SGLANG_SHIMS=0": base_env(SGLANG_SHIMS="0", **kernel_env)})

    print(f"date: {time.strftime('%Y-%m-%d')}; machine: {platform.machine()}, "
          f"{os.cpu_count()} CPUs, Python {platform.python_version()}; rounds: {args.rounds}")
    print("\n| `python -c pass` | p10 ms | median ms | ratio of p10 to bare |")
    print("|---|---|---|---|")
    base = percentile(start["bare venv"], 0.1)
    for name, values in start.items():
        p10 = percentile(values, 0.1)
        print(f"| {name} | {p10:.2f} | {statistics.median(values):.2f} | {p10 / base:.3f} |")
    print("\n| first `import sgl_kernel` (stand-in 0.3.18, sglang 0.5.1 metadata) "
          "| p10 ms | median ms | ratio of p10 |")
    print("|---|---|---|---|")
    off = percentile(first["SGLANG_SHIMS=0"], 0.1)
    for name, values in first.items():
        p10 = percentile(values, 0.1)
        print(f"| {name} | {p10:.2f} | {statistics.median(values):.2f} | {p10 / off:.3f} |")


if __name__ == "__main__":
    main()
