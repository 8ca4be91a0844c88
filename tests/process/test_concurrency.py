"""Concurrency: many processes x many threads importing watched modules at once, with
slow patches; and imports racing ``install()`` / ``revert()``.  Every run must end under
its timeout (no deadlock), apply each patch exactly once per process, and report
consistently."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ..support.packages import manifest_text, write_package, write_patch
from ..support.run import REPO, SITE_PACKAGES, clean_env

TARGETS = {f"soakpkg/m{i}.py": f"VALUE = {i}\n" for i in range(3)} | {"soakpkg/__init__.py": ""}

SLOW_PATCH = """
import time
calls = 0

def apply(ctx):
    global calls
    calls += 1
    time.sleep(0.05)
    ctx.setattr(ctx.module, "VALUE", ctx.module.VALUE + 100)
"""

WORKER = """
import importlib, json, sys, threading
import sglang_shims._bootstrap as b
b.activate("test")
barrier = threading.Barrier(THREADS)
seen = []

def work(i):
    barrier.wait()
    for name in ("soakpkg.m0", "soakpkg.m1", "soakpkg.m2"):
        seen.append((name, importlib.import_module(name).VALUE))

threads = [threading.Thread(target=work, args=(i,)) for i in range(THREADS)]
for t in threads: t.start()
for t in threads: t.join(60)
alive = sum(t.is_alive() for t in threads)
import sglang_shims
status = sglang_shims.status()
calls = {pid: sys.modules["sglang_shims.patches." + pid.replace("-", "_")].calls
         for pid in ("soak-0", "soak-1", "soak-2")}
print(json.dumps({"alive": alive, "values": sorted(set(seen)), "n": len(seen),
                  "calls": calls,
                  "states": {k: v["state"] for k, v in status.items() if k.startswith("soak")}}))
"""


def setup(tmp_path: Path) -> tuple[Path, Path]:
    site = write_package(tmp_path / "site", TARGETS)
    patches = tmp_path / "patches"
    for i in range(3):
        write_patch(patches, f"soak-{i}", manifest_text(f"soak-{i}", f"soakpkg.m{i}"), SLOW_PATCH)
    return site, patches


def soak(tmp_path: Path, processes: int, threads: int) -> list[dict[str, object]]:
    site, patches = setup(tmp_path)
    env = clean_env(SGLANG_SHIMS_PATH=str(patches),
                    PYTHONPATH=os.pathsep.join([str(REPO), str(site), *SITE_PACKAGES]))
    code = WORKER.replace("THREADS", str(threads))
    procs = [subprocess.Popen([sys.executable, "-S", "-c", code], env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for _ in range(processes)]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)  # a deadlock would end here
        assert proc.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    return results


def test_soak_50_processes_8_threads(tmp_path: Path) -> None:
    results = soak(tmp_path, processes=50, threads=8)
    assert len(results) == 50
    for r in results:
        assert r["alive"] == 0
        assert r["n"] == 8 * 3
        assert r["values"] == [["soakpkg.m0", 100], ["soakpkg.m1", 101], ["soakpkg.m2", 102]]
        assert r["calls"] == {"soak-0": 1, "soak-1": 1, "soak-2": 1}  # exactly once
        assert r["states"] == {"soak-0": "applied", "soak-1": "applied", "soak-2": "applied"}


RACE = """
import importlib, json, sys, threading
import sglang_shims
stop = threading.Event()
errors = []

def importer():
    for round_ in range(ROUNDS):
        for name in ("soakpkg.m0", "soakpkg.m1", "soakpkg.m2"):
            sys.modules.pop(name, None)
            try:
                importlib.import_module(name)
            except Exception as exc:
                errors.append(repr(exc))

def toggler():
    while not stop.is_set():
        sglang_shims.install()
        sglang_shims.revert()

t1 = threading.Thread(target=importer)
t2 = threading.Thread(target=toggler)
t2.start(); t1.start()
t1.join(120); stop.set(); t2.join(120)
sglang_shims.revert()
states = {k: v["state"] for k, v in sglang_shims.status().items() if k.startswith("soak")}
mods = [importlib.import_module(n) for n in ("soakpkg.m0", "soakpkg.m1", "soakpkg.m2")]
print(json.dumps({"alive": t1.is_alive() + t2.is_alive(), "errors": errors,
                  "states": states, "values": [m.VALUE for m in mods]}))
"""


@pytest.mark.parametrize("rounds", [30])
def test_imports_race_install_and_revert(tmp_path: Path, rounds: int) -> None:
    site, patches = setup(tmp_path)
    env = clean_env(SGLANG_SHIMS_PATH=str(patches),
                    PYTHONPATH=os.pathsep.join([str(REPO), str(site), *SITE_PACKAGES]))
    proc = subprocess.run([sys.executable, "-S", "-c", RACE.replace("ROUNDS", str(rounds))],
                          env=env, text=True, capture_output=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    assert data["alive"] == 0 and data["errors"] == []
    # after the final revert, nothing is left patched and every record says so
    assert set(data["states"].values()) <= {"reverted", "pending"}
    # stock values exactly: a module imported while installed was restored by revert(), one
    # imported while reverted was never patched (patched values are 100, 101, 102)
    assert data["values"] == [0, 1, 2]
