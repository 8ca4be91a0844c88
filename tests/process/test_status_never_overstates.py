"""``status()`` and ``sglang-shims status`` never say a patch is in effect when it is not.

Each test sets up a way the report could claim more than is true that only a fresh
interpreter shows: a module imported around our hook, a namespace-package kernel, a typo'd
report folder, fork children and multiprocessing's helpers.  A module made stock again by
a reload, and the control, are checked in-process in
``tests/unit/test_status_never_overstates.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ..support.packages import manifest_text, write_package, write_patch
from ..support.run import REPO, SITE_PACKAGES, clean_env, run_python

TARGET = {"shimtarget/__init__.py": "", "shimtarget/mod.py": "VALUE = 1\n"}
APPLY = """
    def apply(ctx):
        ctx.setattr(ctx.module, "VALUE", 2)
"""
STATE = """
import json, sglang_shims
entry = sglang_shims.status()["demo-patch"]
print(json.dumps([entry["state"], entry["reason"]]))
"""


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Path, Path]:
    target = write_package(tmp_path / "site", TARGET)
    patches = write_patch(tmp_path / "patches", "demo-patch",
                          manifest_text("demo-patch", "shimtarget.mod"), APPLY)
    return target, patches


def state_after(setup: tuple[Path, Path], code: str, activate: bool = True) -> list[str]:
    target, patches = setup
    result = run_python(code + STATE, paths=(target,), activate=activate,
                        env={"SGLANG_SHIMS_PATH": str(patches)})
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    state = json.loads(lines[-1])
    assert isinstance(state, list)
    return [*lines[:-1], *state]


class_finder = """
import importlib.machinery, sys
class Delegating:
    def find_spec(self, name, path=None, target=None):
        if name == "shimtarget.mod":
            return importlib.machinery.PathFinder.find_spec(name, path)
        return None
sys.meta_path.insert(0, Delegating())
import shimtarget.mod as m
print(m.VALUE)
"""


def test_finder_ahead_of_ours_is_bypassed(setup: tuple[Path, Path]) -> None:
    """A finder put before ours serves the module: stock, and said so (it was
    'pending -- waiting for shimtarget.mod to be imported' while it was imported)."""
    value, state, reason = state_after(setup, class_finder)
    assert value == "1"
    assert state == "bypassed"
    assert "SourceFileLoader" in reason and "__main__.Delegating" in reason


def test_imported_before_activation_is_bypassed(setup: tuple[Path, Path]) -> None:
    """As when another .pth sorted first imports the module before ours activates."""
    value, state, reason = state_after(setup, """
import shimtarget.mod as m
import sglang_shims._bootstrap as b
b.activate("pth")
print(m.VALUE)
""", activate=False)
    assert value == "1"
    assert state == "bypassed" and "without the shims' hook" in reason


def test_pytest_rewriter_is_bypassed(setup: tuple[Path, Path], tmp_path: Path) -> None:
    """pytest's assertion rewriter sits before our finder and loads plugin modules."""
    target, patches = setup
    (tmp_path / "test_probe.py").write_text(
        "import json, sglang_shims\n"
        "def test_probe():\n"
        "    import shimtarget.mod as m\n"
        "    entry = sglang_shims.status()['demo-patch']\n"
        "    print('RESULT', json.dumps([m.VALUE, entry['state'], entry['reason']]))\n")
    code = ("import sglang_shims._bootstrap as b; b.activate('test'); import pytest, sys;"
            f" sys.exit(pytest.main(['-p', 'shimtarget.mod', '-s', '-q', '-p', 'no:cacheprovider',"
            f" {str(tmp_path / 'test_probe.py')!r}]))")
    env = clean_env(SGLANG_SHIMS_PATH=str(patches), PYTHONPATH=":".join(
        [str(REPO), str(target), *SITE_PACKAGES]))
    proc = subprocess.run([sys.executable, "-S", "-c", code], env=env, capture_output=True,
                          text=True, timeout=120, cwd=tmp_path, check=False)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")), None)
    assert line is not None, proc.stdout + proc.stderr
    value, state, reason = json.loads(line.split(" ", 1)[1])
    assert value == 1
    assert state == "bypassed" and "AssertionRewritingHook" in reason


def test_namespace_kernel_is_judged(tmp_path: Path) -> None:
    """A folder sgl_kernel/ without __init__.py (what a broken uninstall leaves): every
    sgl_kernel patch is judged -- none stays pending as if the kernel were not imported."""
    (tmp_path / "sgl_kernel" / "sub").mkdir(parents=True)
    (tmp_path / "sgl_kernel" / "sub" / "__init__.py").write_text("")
    result = run_python("""
        import json, sgl_kernel, sglang_shims
        print(json.dumps({k: v["state"] for k, v in sglang_shims.status().items()
                          if v["target"] == "sgl_kernel"}))
    """, paths=(tmp_path,))
    assert result.returncode == 0, result.stderr
    states = result.json()
    assert isinstance(states, dict) and len(states) >= 3
    assert "pending" not in states.values(), states


def cli(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    env = clean_env(PYTHONPATH=":".join([str(REPO), *SITE_PACKAGES]))
    return subprocess.run([sys.executable, "-S", "-m", "sglang_shims", *args], env=env,
                          capture_output=True, text=True, timeout=120, cwd=cwd, check=False)


@pytest.mark.parametrize("make", [False, True], ids=["missing", "empty"])
def test_status_on_a_folder_without_reports_fails(tmp_path: Path, make: bool) -> None:
    folder = tmp_path / "reprots"  # a typo
    if make:
        folder.mkdir(mode=0o700)
    result = cli("status", "--report-dir", str(folder))
    assert result.returncode != 0
    assert str(folder) in result.stdout + result.stderr
    assert ("does not exist" if not make else "no process reports") in result.stdout


FORKS = """
import multiprocessing as mp, os, sys
import shimtarget.mod as m

def child(q):
    q.put((os.getpid(), m.VALUE))

if __name__ == "__main__":
    ctx = mp.get_context(sys.argv[1])
    q = ctx.Queue()
    procs = [ctx.Process(target=child, args=(q,)) for _ in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    print(sorted(q.get()[1] for _ in procs))
"""


def test_fork_children_and_helpers(setup: tuple[Path, Path], tmp_path: Path) -> None:
    """Fork children report (they leave by os._exit, so atexit never runs); their report
    says it is theirs, forked from the parent; the status counts 4 processes, not 1."""
    target, patches = setup
    reports = tmp_path / "reports"
    script = tmp_path / "forks.py"
    script.write_text(FORKS)
    env = clean_env(SGLANG_SHIMS_PATH=str(patches), SGLANG_SHIMS_REPORT_DIR=str(reports),
                    PYTHONPATH=":".join([str(REPO), str(target), *SITE_PACKAGES]))
    boot = "import sglang_shims._bootstrap as b; b.activate('test'); import runpy, sys;"
    proc = subprocess.run(
        [sys.executable, "-S", "-c", boot + f" sys.argv[:] = [{str(script)!r}, 'fork'];"
         f" runpy.run_path({str(script)!r}, run_name='__main__')"],
        env=env, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[2, 2, 2]"
    result = cli("status", "--json", "--report-dir", str(reports))
    data = json.loads(result.stdout)
    processes = data["processes"]
    assert len(processes) == 4, processes
    children = [p for p in processes if "forked_from" in p]
    assert len(children) == 3
    assert all(p["inherited"] is False and "Process-" in p["role"] for p in children), \
        children
    assert data["patches"]["demo-patch"]["verdict"] == "applied in 4/4 processes"


def test_helper_process_is_labelled_not_counted(setup: tuple[Path, Path],
                                                tmp_path: Path) -> None:
    """multiprocessing starts its resource tracker as ``python -c 'from
    multiprocessing.resource_tracker import main;main(fd)'``; it runs no sglang code."""
    target, patches = setup
    reports = tmp_path / "reports"
    env = clean_env(SGLANG_SHIMS_PATH=str(patches), SGLANG_SHIMS_REPORT_DIR=str(reports),
                    PYTHONPATH=":".join([str(REPO), str(target), *SITE_PACKAGES]))
    boot = "import sglang_shims._bootstrap as b; b.activate('test')"
    for code in ("from multiprocessing.resource_tracker import main\n" + boot,
                 boot + "\nimport shimtarget.mod"):
        report = ("\nimport sglang_shims; sglang_shims.status()\n"
                  "from sglang_shims.engine import process; process.write_report(process.get())")
        proc = subprocess.run([sys.executable, "-S", "-c", code + report], env=env,
                              capture_output=True, text=True, timeout=120, check=False)
        assert proc.returncode == 0, proc.stderr
    result = cli("status", "--report-dir", str(reports))
    assert "(1 processes, and 1 multiprocessing helpers not counted)" in result.stdout
    assert "helper: multiprocessing resource tracker" in result.stdout
    assert "applied in 1/1 processes" in result.stdout


POOL = """
import multiprocessing as mp, os, sys


def work(_):
    import shimtarget.mod as m  # first imported in the worker, not in the fork server
    return m.VALUE


if __name__ == "__main__":
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload([])
    with ctx.Pool(3) as pool:
        print(sorted(pool.map(work, range(6), chunksize=1)))
"""


def test_forkserver_pool_workers_are_processes_not_helpers(setup: tuple[Path, Path],
                                                           tmp_path: Path) -> None:
    """Workers forked by a fork server that never woke the engine keep the server's
    command line; they still run the program's code, so status counts them."""
    target, patches = setup
    reports = tmp_path / "reports"
    script = tmp_path / "pool.py"
    script.write_text(POOL)
    env = clean_env(SGLANG_SHIMS_PATH=str(patches),
                    PYTHONPATH=":".join([str(REPO), str(target)]))
    proc = subprocess.run([sys.executable, "-m", "sglang_shims.launch", "--report-dir",
                           str(reports), str(script)], env=env, capture_output=True,
                          text=True, timeout=120, check=False, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[2, 2, 2, 2, 2, 2]"
    data = json.loads(cli("status", "--json", "--report-dir", str(reports)).stdout)
    workers = [p for p in data["processes"] if "ForkServerPoolWorker" in str(p["role"])
               or "PoolWorker" in str(p["role"])]
    assert len(workers) >= 1, data["processes"]
    assert not [h for h in data["helpers"] if "PoolWorker" in str(h.get("role"))], data["helpers"]
