"""``e2e_serve.py --step-trace``: the hook inside the server (``examples/step_trace``) and
the reading of its rows (``examples/_e2e_trace.py``), on CPU."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from ..support.programs import program, write_tree
from ..support.run import REPO, SITE_PACKAGES, Result, clean_env
from ..support.scripts import load_script

HOOK = REPO / "examples" / "step_trace"


@pytest.fixture(scope="module")
def trace() -> ModuleType:
    return load_script("examples/_e2e_trace.py", "_e2e_trace", keep=True)


def _run_forward(tmp_path: Path, folder: str) -> Result:
    """tests/programs/scripts/step_trace/forward.py with the hook first on the path, the
    stand-in sglang after it, site processing on (a ``sitecustomize`` only runs there)."""
    root = write_tree("scripts/step_trace", tmp_path / "tree")
    path = ":".join([str(HOOK), str(root), *SITE_PACKAGES])
    env = clean_env(PYTHONPATH=path, SGLANG_SHIMS="0", SGLANG_STEP_TRACE=folder)
    # not run_python: that one starts with -S, and only site processing runs a sitecustomize
    proc = subprocess.run([sys.executable, "-c", program("scripts/step_trace/forward"),
                           str(tmp_path / "out")], env=env, capture_output=True, text=True,
                          timeout=120, check=False, cwd=tmp_path)
    return Result.of(proc)


def test_the_hook_wraps_forward_and_writes_a_row_per_call(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    got = _run_forward(tmp_path, str(tmp_path / "out"))
    assert got.returncode == 0, got.stderr
    out = got.json()
    assert out["wrapped"] is True
    assert out["returned"] == [["ran", 4, [1], {"flag": True}], ["ran", 8, [], {}],
                               ["ran", 8, [], {}]]
    assert out["chained"] == "1"  # the sitecustomize it shadows still ran
    rows = out["rows"]
    assert [(r[4], r[5]) for r in rows] == [(4, 0), (8, 1), (8, 1)]
    assert all(len(r) == 9 and r[6] is None and r[7] is None for r in rows)  # no CUDA here
    assert all(isinstance(r[8], int) and r[8] >= 0 for r in rows)  # the CPU it ran on
    assert rows[0][0] <= rows[1][0] <= rows[2][0]
    assert rows[1][3] > rows[0][3]  # gc.collect() ran between calls 1 and 2


def test_without_a_folder_the_hook_wraps_nothing(tmp_path: Path) -> None:
    got = _run_forward(tmp_path, str(tmp_path / "missing"))
    assert got.returncode == 0, got.stderr
    out = got.json()
    assert out["wrapped"] is False and out["rows"] == [] and out["chained"] == "1"


def _rows(steps: list[tuple[float, float, float, float]], batch: int = 8,
          start: float = 1000.0) -> list[list[Any]]:
    """Trace rows for decode steps given as (step ms, gpu ms, cpu ms, gc ms); the gap before
    each call is what the step left after its GPU work."""
    rows, t, cpu, gcs, gap = [], start, 0.0, 0.0, None
    for step, gpu, busy, collect in steps:
        rows.append([t, 0.1, cpu, gcs, batch, 1, gpu, gap])
        t, cpu, gcs, gap = t + step / 1e3, cpu + busy / 1e3, gcs + collect / 1e3, step - gpu
    rows.append([t, 0.1, cpu, gcs, batch, 1, 1.0, gap])
    return rows


def test_slow_steps_where_the_gpu_waits_are_the_hosts(trace: ModuleType) -> None:
    steps = [(1.0, 0.9, 1.0, 0.0)] * 30 + [(2.0, 0.9, 2.0, 0.8)] * 10 + [(1.0, 0.9, 1.0, 0.0)] * 5
    rows = _rows(steps) + _rows([(1.0, 0.9, 1.0, 0.0)] * 5, batch=1, start=2000.0)
    got = trace.summarize(rows, [(8, 999.0, 1100.0)], [])["8"]
    assert (got["steps"], got["slow_steps"], got["stretches"]) == (45, 10, 1)
    assert got["slow"]["step_ms"] == pytest.approx(2.0)
    assert got["slow"]["gap_ms"] == pytest.approx(1.1)
    assert got["other"]["gap_ms"] == pytest.approx(0.1)
    assert got["slow"]["cpu_ms"] == pytest.approx(2.0)
    assert got["slow"]["gc_ms"] == pytest.approx(0.8)
    assert got["verdict"] == "host"


def test_each_step_owns_its_parts_and_the_gap_after_its_gpu_work(trace: ModuleType) -> None:
    """A step runs from one call to the next: its GPU time is its own call's, its gap the
    idle before the next call's work, its CPU and GC time what the thread spent between."""
    rows = _rows([(1.0, 0.9, 1.0, 0.0), (3.0, 1.0, 2.5, 0.5), (1.2, 1.1, 1.2, 0.0)])
    got = trace.step_parts(rows, 8, 0.0, 1e9, [])
    assert [round(s["step_ms"], 6) for s in got] == [1.0, 3.0, 1.2]
    assert [s["gpu_ms"] for s in got] == [0.9, 1.0, 1.1]
    assert [round(s["gap_ms"], 6) for s in got] == [0.1, 2.0, 0.1]
    assert [round(s["cpu_ms"], 6) for s in got] == [1.0, 2.5, 1.2]
    assert [round(s["gc_ms"], 6) for s in got] == [0.0, 0.5, 0.0]


def test_slow_steps_of_longer_gpu_work_are_the_gpus(trace: ModuleType) -> None:
    steps = ([(1.0, 0.9, 1.0, 0.0)] * 20 + [(1.8, 1.7, 1.0, 0.0)] * 3
             + [(1.0, 0.9, 1.0, 0.0)] * 20 + [(1.8, 1.7, 1.0, 0.0)] * 3)
    got = trace.summarize(_rows(steps), [(8, 0.0, 1e9)], [])["8"]
    assert (got["slow_steps"], got["stretches"], got["verdict"]) == (6, 2, "gpu")


def test_each_window_is_its_own_run_and_no_step_spans_two(trace: ModuleType) -> None:
    first = _rows([(1.0, 0.9, 1.0, 0.0)] * 10)
    second = _rows([(1.0, 0.9, 1.0, 0.0)] * 10, start=1010.5)  # 0.5 s later: not a step
    got = trace.summarize(first + second, [(8, 999.0, 1000.02), (8, 1010.0, 1011.0)], [])["8"]
    assert got["steps"] == 20 and got["slow_steps"] == 0 and got["verdict"] == "none"


def test_no_gpu_times_give_no_verdict_on_the_gpu(trace: ModuleType) -> None:
    rows = _rows([(1.0, 0.9, 1.0, 0.0)] * 10 + [(3.0, 0.9, 1.0, 0.0)] * 2)
    for row in rows:
        row[6] = row[7] = None
    got = trace.summarize(rows, [(8, 0.0, 1e9)], [])["8"]
    assert got["slow_steps"] == 2 and got["verdict"] == "unknown"


def test_the_sm_clock_is_the_sample_nearest_each_step(trace: ModuleType, tmp_path: Path) -> None:
    smi = tmp_path / "smi.csv"
    smi.write_text("2026/12/05 10:00:00.000, 1980, 2619, 400.1, 50, 90, 0x0000000000000000\n"
                   "garbage line\n"
                   "2026/12/05 10:00:01.000, 1410, 2619, 700.5, 60, 99, 0x0000000000000004\n",
                   encoding="utf-8")
    samples = trace.read_smi(smi)
    assert [(s[1], s[2]) for s in samples] == [(1980.0, 400.1), (1410.0, 700.5)]
    t0 = samples[0][0]
    rows = _rows([(1.0, 0.9, 1.0, 0.0)] * 5, start=t0) + _rows([(1.0, 0.9, 1.0, 0.0)] * 5,
                                                               start=t0 + 1.0)
    got = trace.summarize(rows, [(8, t0 - 1, t0 + 0.5), (8, t0 + 0.9, t0 + 2)], samples)["8"]
    assert got["other"]["sm_mhz"] == pytest.approx((1980 + 1410) / 2)
    far = trace.summarize(_rows([(1.0, 0.9, 1.0, 0.0)] * 5, start=t0 + 30),
                          [(8, 0.0, 1e12)], samples)["8"]
    assert far["other"]["sm_mhz"] is None  # no sample within 0.25 s


def test_the_cores_of_slow_and_other_steps_are_counted(trace: ModuleType) -> None:
    rows = _rows([(1.0, 0.9, 1.0, 0.0)] * 10 + [(3.0, 0.9, 3.0, 0.0)] * 2)
    for i, row in enumerate(rows):
        row.append(5 if i >= 10 else 2)
    got = trace.summarize(rows, [(8, 0.0, 1e9)], [])["8"]
    assert got["cores"] == {"slow": {"5": 2}, "other": {"2": 10}}
    old = trace.summarize(_rows([(1.0, 0.9, 1.0, 0.0)] * 3), [(8, 0.0, 1e9)], [])["8"]
    assert old["cores"] == {"slow": {}, "other": {}}  # rows of 8 fields: no core kept


def test_the_decode_process_is_read_and_a_cut_line_skipped(trace: ModuleType,
                                                          tmp_path: Path) -> None:
    (tmp_path / "steps-1.jsonl").write_text(json.dumps([1.0, 0.1, 0, 0, 1, 0, None, None])
                                            + "\n", encoding="utf-8")
    decode = [json.dumps(r) for r in _rows([(1.0, 0.9, 1.0, 0.0)] * 3)]
    (tmp_path / "steps-2.jsonl").write_text("\n".join(decode) + '\n[1.0, 0.1, 0', encoding="utf-8")
    assert len(trace.read_steps(tmp_path)) == 4


def test_the_table_has_a_row_per_server_and_batch(trace: ModuleType) -> None:
    got = trace.summarize(_rows([(1.0, 0.9, 1.0, 0.0)] * 10 + [(2.0, 0.9, 2.0, 0.0)] * 2),
                          [(8, 0.0, 1e9), (32, 0.0, 1e9)], [])
    lines = trace.table({"speed-a#1": got})
    assert len(lines) == 4 and lines[2].startswith("| speed-a#1 | 8 | 12 | 2 (1) |")
    assert lines[2].endswith("| host |") and lines[3].startswith("| speed-a#1 | 32 | 0 |")
    assert all(line.count("|") == lines[0].count("|") for line in lines)


def test_the_timed_runs_are_found_from_the_rows(trace: ModuleType) -> None:
    """Per batch size: warm-up runs first, then the timed ones; only the last ``reps`` runs
    count, a short run (prefill-sized) is no run, and a pause splits two runs."""
    steady = [(1.0, 0.9, 1.0, 0.0)] * 40
    rows = (_rows(steady, start=100.0) + _rows(steady, start=101.0)      # batch 8 warm-ups
            + _rows(steady, batch=1, start=102.0)                        # batch 1 warm-up
            + _rows(steady, start=103.0) + _rows(steady, start=104.0)    # batch 8 timed
            + _rows([(1.0, 0.9, 1.0, 0.0)] * 3, start=105.0)            # too short
            + _rows(steady, batch=1, start=106.0))                       # batch 1 timed
    got = trace.windows_from_rows(rows, reps=2)
    assert [(b, round(s, 3)) for b, s, _ in got] == [(1, 102.0), (8, 103.0), (8, 104.0),
                                                      (1, 106.0)]
    assert all(round(e - s, 3) == 0.04 for _, s, e in got)  # 41 calls, 40 steps of 1 ms


def test_host_regimes_run_length_the_hosts_fast_and_slow_steps(trace: ModuleType) -> None:
    steps = [{"host_ms": x} for x in (0.3, 0.3, 0.6, 0.5, 0.3, None)]
    assert trace.regimes(steps, 0.44) == "f2 s2 f2"
    assert trace.regimes([], 0.44) == ""

