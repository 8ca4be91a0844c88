"""``sglang-shims status`` as a gate: which reports make it fail, read in-process.

Every state whose patch is not in effect fails the gate; so do reports that cannot be read
(too deep, too large, not JSON, not a report), and a run the launcher never started.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from sglang_shims import _trust
from sglang_shims.cli import main
from sglang_shims.cli import status as status_module
from sglang_shims.cli.status import NOT_IN_EFFECT, aggregate, model_line
from sglang_shims.launch import LAUNCH_RECORD


def report(folder: Path, pid: int, states: dict[str, str], **process: object) -> Path:
    data = {"schema": 1,
            "process": {"pid": pid, "ppid": 1, "role": "main", "origin": "pth", "argv": ["x"],
                        "time": pid, **process},
            "patches": {k: {"state": v, "reason": f"because {v}"} for k, v in states.items()}}
    path = folder / f"{pid}.json"
    path.write_text(json.dumps(data))
    return path


def status(folder: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, object]]:
    code = main(["status", "--json", "--report-dir", str(folder)])
    return code, json.loads(capsys.readouterr().out)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    return run


def test_all_applied_passes(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report(folder, 10, {"a": "applied", "b": "not-applicable"})
    report(folder, 11, {"a": "applied", "b": "not-applicable"}, role="scheduler")
    code, data = status(folder, capsys)
    assert (code, data["problems"]) == (0, [])


@pytest.mark.parametrize("state", NOT_IN_EFFECT)
def test_each_state_not_in_effect_fails(folder: Path, capsys: pytest.CaptureFixture[str],
                                        state: str) -> None:
    report(folder, 10, {"a": "applied"})
    report(folder, 11, {"a": state}, role="scheduler")
    code, data = status(folder, capsys)
    assert code == 1
    assert any(p.startswith(f"a {state} in pid 11: because {state}") for p in data["problems"])


def test_the_states_not_in_effect_are_these() -> None:
    """A state that leaves stock code in place must be on the list (the list is the gate)."""
    assert set(NOT_IN_EFFECT) == {"failed", "drifted", "stale", "bypassed"}


@pytest.mark.parametrize(("content", "why"), [
    ("[" * 100_000 + "]" * 100_000, "nested 100000 levels deep"),
    ('{"process": ' * 70 + "1" + "}" * 70, "nested 70 levels deep"),
    ("not json", "not JSON"),
    ("[1, 2]", "not a report (a JSON list"),
    ('{"process": {}}', "not a report (no 'patches' object)"),
    (b"\xff\xfe{}", "not UTF-8"),
])
def test_unreadable_report_is_named_and_fails(folder: Path, capsys: pytest.CaptureFixture[str],
                                              content: str | bytes, why: str) -> None:
    report(folder, 10, {"a": "applied"})
    bad = folder / "11.json"
    if isinstance(content, bytes):
        bad.write_bytes(content)
    else:
        bad.write_text(content)
    code, data = status(folder, capsys)
    assert code == 1
    [line] = data["unreadable"]
    assert line.startswith("11.json: ") and why in line, line
    assert "1 report(s) could not be read" in " ".join(data["problems"])


def test_a_huge_report_is_not_read_whole(folder: Path) -> None:
    report(folder, 10, {"a": "applied"})
    (folder / "11.json").write_text(" " * (17 << 20))
    [line] = aggregate(folder).unreadable
    assert "larger than" in line


def test_only_pid_named_files_are_reports(folder: Path, capsys: pytest.CaptureFixture[str]
                                          ) -> None:
    report(folder, 10, {"a": "applied"})
    (folder / "notes.json").write_text("[]")
    code, data = status(folder, capsys)
    assert (code, data["unreadable"]) == (0, [])


def test_a_run_that_never_started_fails(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (folder / LAUNCH_RECORD).write_text(json.dumps({"failed": "no such script: x.py"}))
    code, data = status(folder, capsys)
    assert code == 1
    assert data["problems"] == ["this run never started: no such script: x.py"]


def test_a_run_that_started_is_judged_by_its_reports(folder: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    (folder / LAUNCH_RECORD).write_text(json.dumps({"failed": None}))
    report(folder, 10, {"a": "applied"})
    assert status(folder, capsys)[0] == 0


def test_newest_run_is_the_failed_launch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    """Without --report-dir the newest run is judged, and a launch that failed says so."""
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.delenv("SGLANG_SHIMS_REPORT_DIR", raising=False)
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    root = tmp_path / f"sglang-shims-{os.geteuid()}"
    good, failed = root / "1-good", root / "2-failed"
    for run in (root, good, failed):
        run.mkdir(mode=0o700)
    report(good, 10, {"a": "applied"})
    (failed / LAUNCH_RECORD).write_text(json.dumps({"failed": "no module named x"}))
    os.utime(good, (1, 1))
    code = main(["status", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 1 and data["directory"] == str(failed)
    assert data["problems"] == ["this run never started: no module named x"]


def test_the_patch_table_marks_a_patch_in_one_state_everywhere(
        folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report(folder, 10, {"a": "applied", "b": "applied"})
    report(folder, 11, {"a": "applied", "b": "failed"}, role="scheduler")
    assert main(["status", "--report-dir", str(folder)]) == 1
    rows = {line.split()[0]: line for line in capsys.readouterr().out.splitlines() if line}
    assert rows["a"].split()[1:] == ["applied", "in", "2/2", "processes", "-"]
    assert "scheduler (pid 11): failed, because failed" in rows["b"]


def test_a_model_line_puts_what_would_fail_first() -> None:
    model = {"model": "Qwen/Qwen3-30B-A3B", "patch": "sgl-kernel-triton-fallback",
             "pids": [10, 11],
             "verdict": {"architecture": "Qwen3MoeForCausalLM", "quantization": None,
                         "would_fail": ["moe_sum"], "unsupported": ["fp4 weights"],
                         "ops": {"rmsnorm": "ours", "topk_softmax": "real kernel (0.4.5)",
                                 "moe_sum": "none: no kernel"}}}
    assert model_line(model) == (
        "model Qwen/Qwen3-30B-A3B (Qwen3MoeForCausalLM, quantization none) via"
        " sgl-kernel-triton-fallback, pid 10, 11: WOULD FAIL at call: moe_sum; ours: rmsnorm;"
        " real kernel: topk_softmax; fp4 weights")


def test_a_run_folder_another_owner_made_is_never_the_newest(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As an ordinary user: the newest run folder under the user's own launch folder is
    root's (root may write there), so the user's older run is the one judged."""
    if os.geteuid() != 0:
        pytest.skip("not root: a folder of another owner is made with os.chown")
    user = 4242
    monkeypatch.setattr(_trust, "me", lambda: user)
    monkeypatch.delenv("SGLANG_SHIMS_REPORT_DIR", raising=False)
    root = tmp_path / "launches"
    monkeypatch.setattr(status_module, "launch_root", lambda: root)
    mine, roots = root / "1-mine", root / "2-roots"
    for run in (root, mine, roots):
        run.mkdir(mode=0o700)
    for run in (root, mine):
        os.chown(run, user, user)
    os.utime(mine, (1, 1))
    assert status_module.resolve_dir(None) == mine


def test_the_models_of_applied_patches_are_gathered_per_patch_model_and_verdict(
        folder: Path) -> None:
    verdict = {"architecture": "LlamaForCausalLM", "would_fail": [], "ops": {}}
    other = {"architecture": "LlamaForCausalLM", "would_fail": ["moe_sum"], "ops": {}}

    def served(pid: int, state: str, models: dict[str, object], patch: str = "k") -> None:
        path = report(folder, pid, {patch: state})
        data = json.loads(path.read_text())
        data["patches"][patch]["details"] = {"models": models}
        path.write_text(json.dumps(data))

    served(10, "applied", {"llama": verdict})
    served(11, "applied", {"llama": verdict})
    served(12, "applied", {"llama": other})
    served(13, "failed", {"qwen": verdict})  # not in effect: its verdict is not shown
    served(14, "applied", {"llama": verdict}, patch="h")
    assert [(m["patch"], m["model"], m["verdict"], m["pids"])
            for m in aggregate(folder).models] == [
        ("k", "llama", verdict, [10, 11]), ("k", "llama", other, [12]),
        ("h", "llama", verdict, [14])]


def test_a_launch_record_is_read_up_to_one_mib(folder: Path) -> None:
    (folder / LAUNCH_RECORD).write_text(json.dumps({"failed": "x" * ((1 << 20) - 20)}))
    assert aggregate(folder).problems[0] == "this run never started: " + "x" * ((1 << 20) - 20)
    (folder / LAUNCH_RECORD).write_text(json.dumps({"failed": "x" * (1 << 20)}))
    assert aggregate(folder).problems[0] == (
        f"the launcher's record {LAUNCH_RECORD} is unreadable: larger than 1,048,576 bytes"
        f" ({(1 << 20) + 14:,})")


def test_processes_are_listed_by_time_then_pid_a_report_without_one_first(folder: Path) -> None:
    report(folder, 1, {"a": "applied"}, time=5)  # pid 1: a container's first process
    path = report(folder, 7, {"a": "applied"}, time=5)
    data = json.loads(path.read_text())
    del data["process"]["pid"]
    path.write_text(json.dumps(data))
    report(folder, 3, {"a": "applied"}, time=4)
    assert [p.get("pid") for p in aggregate(folder).processes] == [3, None, 1]


def test_processes_that_disagree_on_a_patch_are_a_problem(folder: Path) -> None:
    report(folder, 10, {"a": "applied", "b": "applied"})
    report(folder, 11, {"a": "not-applicable", "b": "applied"}, role="scheduler")
    disagree = [p for p in aggregate(folder).problems if "disagree" in p]
    assert len(disagree) == 1
    assert disagree[0].startswith("a: processes disagree (")


def test_the_role_column_says_a_helper_and_whose_state_a_fork_child_has() -> None:
    label = status_module.label
    assert label({"role": "main", "helper": "pip"}) == "helper: pip"
    assert label({"role": "scheduler", "forked_from": 7, "inherited": True}) == \
        "scheduler (fork of 7, state inherited at fork)"
    assert label({"role": "scheduler", "forked_from": 7}) == "scheduler (fork of 7, own report)"
    assert label({"role": "scheduler"}) == "scheduler"
