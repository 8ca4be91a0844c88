"""The fallback kernels' first launch per specialisation is serialised across processes.

Tensor-parallel ranks must not all JIT-compile the same kernels at once.  The launch
here is a stand-in that sleeps (on CPU there is no compiler to time); several processes,
released together once all are ready, must run it one after another, and the same harness with
the lock bypassed must see them overlap -- which shows the harness can tell.
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ..support.run import REPO, Result, clean_env, run_python

RACE = """
import json, pathlib, sys, time
from sglang_shims.kernels import compile_lock as c
here = pathlib.Path(sys.argv[1])
spans, ran = [], []
def compile_and_run():
    t0 = time.time(); time.sleep(1.5); spans.append((t0, time.time()))
(here / f"ready-{sys.argv[2]}").write_text("")
while not (here / "go").exists():  # released together, whatever the machine's load
    time.sleep(0.0005)
c.launch(("rmsnorm", "bf16", 4096), compile_and_run)
c.launch(("rmsnorm", "bf16", 4096), lambda: ran.append("again"))   # seen: no lock
c.launch(("silu", "bf16", 4096), lambda: ran.append("other"))      # new key: locked
print(json.dumps({"spans": spans, "ran": ran, "locked": len(c.waits),
                  "broken": c.broken}))
"""

PROCESSES = 3


def race(tmp_path: Path, **env: str) -> list[dict[str, object]]:
    gate = tmp_path / "gate"
    gate.mkdir()
    full = clean_env(PYTHONPATH=str(REPO), TRITON_CACHE_DIR=str(tmp_path / "triton"), **env)
    procs = [subprocess.Popen([sys.executable, "-c", RACE, str(gate), str(i)], env=full,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i in range(PROCESSES)]
    deadline = time.monotonic() + 60
    while len(list(gate.glob("ready-*"))) < PROCESSES and time.monotonic() < deadline:
        time.sleep(0.01)
    (gate / "go").write_text("")
    out = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=60)
        assert p.returncode == 0, stderr
        out.append(Result(p.returncode, stdout, stderr).json())
    return out


def overlaps(results: list[dict[str, object]]) -> int:
    spans = sorted(tuple(s) for r in results for s in r["spans"])  # type: ignore[union-attr]
    return sum(1 for a, b in itertools.pairwise(spans) if b[0] < a[1])


def test_first_launches_run_one_process_at_a_time(tmp_path: Path) -> None:
    results = race(tmp_path)
    assert overlaps(results) == 0, results
    for r in results:
        assert r["ran"] == ["again", "other"]
        assert r["locked"] == 2  # the two first launches, not the repeat
        assert r["broken"] is None
    assert (tmp_path / "triton" / "sglang_shims-compile.lock").is_file()


def test_the_race_is_real_without_the_lock(tmp_path: Path) -> None:
    # Under Triton's interpreter nothing compiles, so nothing is locked: the same
    # processes then overlap, so the test above would have seen it.
    results = race(tmp_path, TRITON_INTERPRET="1")
    assert overlaps(results) == PROCESSES - 1, results
    assert all(r["locked"] == 0 for r in results)


def test_no_lock_file_possible_warns_once_and_still_runs(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    code = """
    import json
    from sglang_shims.kernels import compile_lock as c
    ran = []
    c.launch(("a",), lambda: ran.append(1))
    c.launch(("b",), lambda: ran.append(2))
    print(json.dumps({"ran": ran, "broken": c.broken is not None}))
    """
    result = run_python(code, activate=False, env={"TRITON_CACHE_DIR": str(blocker / "x")})
    assert result.json() == {"ran": [1, 2], "broken": True}
    warnings = [line for line in result.stderr.splitlines() if "cross-process lock" in line]
    assert len(warnings) == 1, result.stderr
    assert "TRITON_CACHE_DIR" in warnings[0]


def test_sizes_follow_tritons_integer_specialisation() -> None:
    from sglang_shims.kernels.compile_lock import sizes

    assert sizes(1, 16, 17, 4096) == ((True, False), (False, True), (False, False),
                                      (False, True))
    assert json.dumps(sizes()) == "[]"


def test_a_recorded_launch_runs_nothing_and_keeps_what_was_asked() -> None:
    """Inside ``recording()`` a launch is kept (kernel, grid, arguments, options, key) and
    not run; with a device, the wrappers launch for it meanwhile, and only then."""
    from sglang_shims.kernels import compile_lock as c
    from sglang_shims.kernels.device import MEASURED, assumed

    class Kernel:
        def __getitem__(self, grid: object) -> object:
            raise AssertionError("a recorded launch ran")

    kernel = Kernel()
    with c.recording() as launches:
        assert assumed() is None
        c.launch_kernel("key", kernel, (3,), 1, 2, BLOCK=4)
    assert launches == [c.Launch(kernel, (3,), (1, 2), {"BLOCK": 4}, "key")]
    with c.recording(MEASURED):
        assert assumed() is MEASURED
    assert assumed() is None


def test_a_locked_first_launch_leaves_no_file_open(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from sglang_shims.kernels import compile_lock as c

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.setattr(c, "broken", None)
    before = len(os.listdir("/proc/self/fd"))
    ran: list[int] = []
    for n in range(3):
        c.launch(("a first launch of this test", n), functools.partial(ran.append, n))
    assert ran == [0, 1, 2] and (tmp_path / c.LOCK_NAME).exists()
    assert len(os.listdir("/proc/self/fd")) == before
