"""Concurrency: many processes x many threads importing watched modules at once, with
slow patches; and imports racing ``install()`` / ``revert()``.  Every run must end under
its timeout (no deadlock), apply each patch exactly once per process, and report
consistently."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ..support.packages import manifest_text, write_package, write_patch
from ..support.programs import program
from ..support.run import REPO, SITE_PACKAGES, Result, clean_env

TARGETS = {f"soakpkg/m{i}.py": f"VALUE = {i}\n" for i in range(3)} | {"soakpkg/__init__.py": ""}

SLOW_PATCH = program("process/concurrency/tree/slow_patch")
WORKER = program("process/concurrency/import_threads")


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
    procs = [subprocess.Popen([sys.executable, "-S", "-c", WORKER, str(threads)], env=env,
                              text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for _ in range(processes)]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)  # a deadlock would end here
        assert proc.returncode == 0, err
        data = Result(proc.returncode, out, err).json()
        assert isinstance(data, dict)
        results.append(data)
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


RACE = program("process/concurrency/imports_race_install")


@pytest.mark.parametrize("rounds", [30])
def test_imports_race_install_and_revert(tmp_path: Path, rounds: int) -> None:
    site, patches = setup(tmp_path)
    env = clean_env(SGLANG_SHIMS_PATH=str(patches),
                    PYTHONPATH=os.pathsep.join([str(REPO), str(site), *SITE_PACKAGES]))
    proc = subprocess.run([sys.executable, "-S", "-c", RACE, str(rounds)],
                          env=env, text=True, capture_output=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    data = Result.of(proc).json()
    assert isinstance(data, dict)
    assert data["alive"] == 0 and data["errors"] == []
    # after the final revert, nothing is left patched and every record says so
    assert set(data["states"].values()) <= {"reverted", "pending"}
    # stock values exactly: a module imported while installed was restored by revert(), one
    # imported while reverted was never patched (patched values are 100, 101, 102)
    assert data["values"] == [0, 1, 2]
