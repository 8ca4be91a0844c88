"""The ``sglang-shims`` CLI: list, explain, check, status, fingerprint, and their exit codes."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from sglang_shims.cli import docs as _docs
from sglang_shims.cli import survey as _static

from ..support.programs import program
from ..support.run import REPO, Result, run_python
from ..support.run import run_cli as cli


def outcome(result: Result) -> tuple[object, dict[str, object]]:
    """(the command's JSON output, {exit, heavy})."""
    meta = result.json()
    assert isinstance(meta, dict)
    body = "\n".join(result.stdout.strip().splitlines()[:-1])
    return (json.loads(body) if body.startswith(("{", "[")) else body), meta


@pytest.fixture(scope="module")
def env051(sglang_release: Callable[[str], Path], standin_kernel: Callable[..., Path]
           ) -> tuple[Path, ...]:
    return (sglang_release("0.5.1"), standin_kernel("0.3.18"))


@pytest.mark.wheels
def test_list_json_static(env051: tuple[Path, ...]) -> None:
    data, meta = outcome(cli("list", "--json", paths=env051))
    assert meta == {"exit": 0, "heavy": []}  # nothing of torch/sglang/kernel imported
    assert isinstance(data, dict)
    patches = {p["id"]: p for p in data["patches"]}
    fused = patches["sgl-kernel-fused-marlin-moe"]
    assert fused["state"] == "would-apply"
    assert fused["evidence"] and all(e.startswith("https://") for e in fused["evidence"])
    assert fused["gates"] == {"sglang": ">=0.4.9.post3,<0.5.6", "sglang-kernel | sgl-kernel":
                              ">=0.3.18"}
    renamed = patches["sgl-kernel-dist-renamed"]
    assert renamed["state"] == "not-applicable"
    assert renamed["reason"] == "sglang-kernel is not installed (needs any version)"


@pytest.mark.wheels
def test_list_human_and_disabled(env051: tuple[Path, ...]) -> None:
    result = cli("list", paths=env051, SGLANG_SHIMS_DISABLE="sgl-kernel-fused-marlin-moe,bogus",
                 COLUMNS="250")
    text, meta = outcome(result)
    assert meta["exit"] == 0
    assert isinstance(text, str)
    header, rule, *rows = text.splitlines()
    assert header.split() == ["id", "state", "reason", "summary"]
    assert set(rule) <= {"-", " "}
    row = next(r for r in rows if r.startswith("sgl-kernel-fused-marlin-moe"))
    assert "disabled" in row and "SGLANG_SHIMS_DISABLE" in row
    assert "warning: SGLANG_SHIMS_DISABLE names 1 unknown patch id: 'bogus'" in text


@pytest.mark.wheels
def test_explain(env051: tuple[Path, ...]) -> None:
    data, meta = outcome(cli("explain", "sgl-kernel-fused-marlin-moe", "--json", paths=env051))
    assert meta["exit"] == 0 and isinstance(data, dict)
    assert data["state"] == "would-apply"
    assert data["evaluation"]["gates"] == ["sglang 0.5.1 in >=0.4.9.post3,<0.5.6",
                                           "sgl-kernel 0.3.18 in >=0.3.18"]
    assert data["evaluation"]["retire"] == [
        "sgl_kernel does not bind fused_marlin_moe (read from its source)"]
    assert len(data["evaluation"]["fingerprints"]) == 2
    assert "0.4.9.post3" in data["range"]
    text, meta = outcome(cli("explain", "sgl-kernel-fused-marlin-moe", paths=env051))
    assert "retire when: the installed kernel exports fused_marlin_moe itself" in str(text)


@pytest.mark.wheels
def test_check_clean_then_drifted(env051: tuple[Path, ...], tmp_path: Path) -> None:
    data, meta = outcome(cli("check", "--json", paths=env051))
    assert meta["exit"] == 0 and isinstance(data, dict)
    assert "sgl-kernel-fused-marlin-moe" in [c["id"] for c in data["checked"]]
    edited = tmp_path / "sglang-edited"
    shutil.copytree(env051[0], edited)
    awq = edited / "sglang/srt/layers/quantization/awq.py"
    awq.write_text(awq.read_text().replace("fused_marlin_moe,\n", "\n", 1))
    data, meta = outcome(cli("check", "--json", paths=(edited, env051[1])))
    assert meta["exit"] == 1 and isinstance(data, dict)
    assert data["drifted"] == ["sgl-kernel-fused-marlin-moe"]
    fused = next(c for c in data["checked"] if c["id"] == "sgl-kernel-fused-marlin-moe")
    assert "no longer does `from sgl_kernel import fused_marlin_moe`" in fused["reason"]


def test_usage_errors_exit_2() -> None:
    for args in (["frobnicate"], ["list", "--nope"], []):
        result = run_python(f"from sglang_shims.cli import main; main({args!r})",
                            activate=False)
        assert result.returncode == 2, args


def test_status_aggregates(tmp_path: Path) -> None:
    def report(pid: int, role: str, states: dict[str, str]) -> None:
        data = {"schema": 1, "process": {"pid": pid, "ppid": 1, "role": role, "origin": "pth",
                                         "argv": ["x"], "time": pid},
                "patches": {k: {"state": v, "reason": f"because {v}"} for k, v in
                            states.items()}}
        (tmp_path / f"{pid}.json").write_text(json.dumps(data))

    report(10, "main", {"a": "applied", "b": "applied"})
    report(11, "scheduler", {"a": "applied", "b": "pending"})
    report(12, "detokenizer", {"a": "applied", "b": "pending"})
    data, meta = outcome(cli("status", "--json", "--report-dir", str(tmp_path)))
    assert meta["exit"] == 0 and isinstance(data, dict)
    assert data["patches"]["a"]["verdict"] == "applied in 3/3 processes"
    assert data["patches"]["b"]["verdict"] == "applied in 1/3; pending in 2/3"
    report(13, "scheduler", {"a": "failed", "b": "pending"})
    text, meta = outcome(cli("status", "--report-dir", str(tmp_path)))
    assert meta["exit"] == 1
    # the detail column wraps to the terminal: read it with the line breaks folded
    assert "scheduler (pid 13): failed, because failed" in " ".join(str(text).split())
    assert "problem: a failed in pid 13" in str(text)


def test_status_without_reports_is_a_problem_not_a_usage_error(tmp_path: Path) -> None:
    result = cli("status", TMPDIR=str(tmp_path))
    data = result.json()
    assert isinstance(data, dict) and data["exit"] == 1
    assert "no report directory" in result.stderr


def test_fingerprint_helper() -> None:
    data, meta = outcome(cli("fingerprint", "sglang_shims.engine.source:function_hash", "--json"))
    assert meta["exit"] == 0 and isinstance(data, dict)
    assert data["file"] == str(REPO / "sglang_shims" / "engine" / "source.py")
    assert len(data["sha256"]) == 16


def test_python_dash_m_entry() -> None:
    result = run_python("import runpy; runpy.run_module('sglang_shims', run_name='__main__')",
                        activate=False, args=("list", "--json"))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["patches"]


def test_patches_doc_is_current() -> None:
    """docs/patches.md is generated by `sglang-shims list --markdown`."""
    expected = _docs.patches_markdown(_static.survey())
    current = (REPO / "docs" / "patches.md").read_text(encoding="utf-8")
    assert current == expected, "regenerate: sglang-shims list --markdown > docs/patches.md"


def test_readme_counts_the_builtin_patches() -> None:
    count = len(list((REPO / "patches").glob("*/manifest.toml")))
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert f"\n{count} patches, each with" in readme, f"README's 'What it fixes' must say {count}"


def test_doctor_flags_kernel_built_for_another_torch(standin_kernel: Callable[..., Path]) -> None:
    """sgl-kernel 0.3.18 was built against torch 2.8.0: next to torch 2.14.1 it is a `fail`
    with the remedy, and doctor exits 1."""
    from ..support.run import need

    need("torch")
    data, meta = outcome(cli("doctor", "--json", "--no-probe",
                             paths=(standin_kernel("0.3.18"),)))
    assert meta["exit"] == 1 and isinstance(data, dict)
    abi = next(f for f in data["findings"] if f["check"] == "sgl-kernel-abi")
    assert abi["level"] == "fail"
    assert "torch 2.8.0" in abi["detail"] and "2.14.1" in abi["detail"]
    assert abi["remedy"]


def test_doctor_runs_anywhere() -> None:
    """No GPU, no torch needed: doctor answers (exit 0 or 1), never crashes."""
    result = run_python("from sglang_shims.cli import main; raise SystemExit(main(['doctor',"
                        " '--json', '--no-probe']))", activate=False)
    assert result.returncode in (0, 1), result.stderr
    findings = json.loads(result.stdout)["findings"]
    assert {f["check"] for f in findings} >= {"python", "gpu"}


# ------------------------------------------------------------------ conventions


def test_version() -> None:
    from importlib import metadata

    result = run_python("from sglang_shims.cli import main; main(['--version'])",
                        activate=False)
    assert result.returncode == 0
    assert result.stdout.strip() == f"sglang-shims {metadata.version('sglang-shims')}"


def test_help_is_plain_text() -> None:
    result = run_python("from sglang_shims.cli import main; main(['--help'])", activate=False)
    assert result.returncode == 0 and "``" not in result.stdout and ":mod:" not in result.stdout
    assert "launch" in result.stdout and "3 internal error" in result.stdout


def test_every_json_output_has_a_schema(tmp_path: Path) -> None:
    for args in (["list"], ["explain", "sgl-kernel-fused-marlin-moe"], ["check"],
                 ["doctor", "--no-probe"], ["fingerprint", "sglang_shims.cli"],
                 ["status", "--report-dir", str(tmp_path)]):
        data, _meta = outcome(cli(*args, "--json"))
        assert isinstance(data, dict) and data["schema"] == 1, args


def test_internal_error_has_its_own_exit_code_and_asks_for_a_report() -> None:
    result = run_python(program("cli/internal_error"), activate=False)
    assert result.returncode == 3
    assert "KeyError: 'bug'" in result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert "internal error in `check`" in last and "please report it" in last
    assert f"sglang-shims {cli_version()}" in last


def cli_version() -> str:
    from importlib import metadata

    return metadata.version("sglang-shims")


def test_bad_patch_id_is_usage_error_from_argparse() -> None:
    result = run_python("from sglang_shims.cli import main; main(['explain', 'nope'])",
                        activate=False)
    assert result.returncode == 2
    assert "unknown patch 'nope'; known ids: alloc-conf-env-mirror," in result.stderr


@pytest.mark.parametrize(("env", "tty", "json_out", "colour"), [
    ({}, True, False, True),
    ({}, False, False, False),
    ({"NO_COLOR": "1"}, True, False, False),
    ({"NO_COLOR": "1", "FORCE_COLOR": "1"}, True, False, False),
    ({"FORCE_COLOR": "1"}, False, False, True),
    ({"TERM": "dumb"}, True, False, False),
    ({"FORCE_COLOR": "1"}, True, True, False),
])
def test_colour_rules(monkeypatch: pytest.MonkeyPatch, env: dict[str, str], tty: bool,
                      json_out: bool, colour: bool) -> None:
    import argparse
    import io

    import sglang_shims.cli as c

    for name in ("NO_COLOR", "FORCE_COLOR", "TERM"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)

    class Stream(io.StringIO):
        def isatty(self) -> bool:
            return tty

    monkeypatch.setattr("sys.stdout", Stream())
    style = c._style(argparse.Namespace(json=json_out))
    assert style.enabled is colour
    assert ("\x1b[" in style("FAIL", "red")) is colour


def test_list_fits_the_terminal_width() -> None:
    text, meta = outcome(cli("list", COLUMNS="80"))
    assert meta["exit"] == 0 and isinstance(text, str)
    lines = text.splitlines()
    ids = {p.name for p in (REPO / "patches").iterdir() if (p / "manifest.toml").is_file()}
    assert all(len(line) <= 80 for line in lines), max(lines, key=len)
    shown = {line.split()[0] for line in lines[2:] if line and not line.startswith(" ")}
    assert ids <= shown  # every id whole, never cut
    states = {"would-apply", "not-applicable", "retired", "disabled", "drifted"}
    assert all(line.split()[1] in states for line in lines[2:] if line[:1].strip()
               and not line.startswith("warning"))


def test_explain_without_a_fingerprint_check_says_so() -> None:
    text, meta = outcome(cli("explain", "sgl-kernel-fused-marlin-moe"))
    assert meta["exit"] == 0 and isinstance(text, str)
    section = text.split("fingerprints:\n", 1)[1].split("\n\n", 1)[0]
    assert "(none)" not in section and "not checked here" in section


def test_doctor_findings_are_wrapped_never_cut() -> None:
    """A finding longer than the terminal is wrapped to it, its remedy whole."""
    from sglang_shims.cli import render

    remedy = ("AWQ/GPTQ MoE models need pip install 'sgl-kernel>=0.2.2,<0.3.18' built for "
              "your torch, or sglang >= 0.5.6; " * 4)
    block = render.block("FAIL", "sgl-kernel-missing-fused-marlin-moe",
                         [("", "x " * 200), ("fix: ", remedy)], width=60)
    lines = block.splitlines()
    assert all(len(line) <= 60 for line in lines)
    fix = " ".join(" ".join(lines).split()).split("fix: ", 1)[1]
    assert fix == " ".join(remedy.split())


def test_list_and_check_agree_on_why_a_default_off_patch_does_not_act(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """``list`` says it is off by default; ``check`` judges it anyway (toggles ignored) and
    says so, instead of a bare state that reads as if the patch were on and inapplicable."""
    from sglang_shims.cli import main

    monkeypatch.setenv("COLUMNS", "250")
    for name in ("SGLANG_SHIMS", "SGLANG_SHIMS_ENABLE", "SGLANG_SHIMS_DISABLE"):
        monkeypatch.delenv(name, raising=False)
    off = "gemma-norm-fp32-plus-one"
    main(["list"])
    [row] = [r for r in capsys.readouterr().out.splitlines() if r.startswith(off)]
    assert "disabled by default" in row
    main(["check"])
    [row] = [r for r in capsys.readouterr().out.splitlines() if r.startswith(off)]
    assert "(off by default; checked as if enabled)" in row
    main(["check", "--json"])
    data = json.loads(capsys.readouterr().out)
    entry = next(e for e in data["checked"] + data["skipped"] if e["id"] == off)
    assert entry["enabled"] is False and "checked as if" not in entry["reason"]
    monkeypatch.setenv("SGLANG_SHIMS_ENABLE", off)
    main(["check"])
    [row] = [r for r in capsys.readouterr().out.splitlines() if r.startswith(off)]
    assert "checked as if enabled" not in row


def test_a_mistyped_patch_id_gets_the_nearest_one(capsys: pytest.CaptureFixture[str]) -> None:
    from sglang_shims.cli import main

    with pytest.raises(SystemExit) as exited:
        main(["explain", "sgl-kernel-fused-marlin"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert ("unknown patch 'sgl-kernel-fused-marlin'; did you mean sgl-kernel-fused-marlin-moe?"
            in err)
    assert "known ids:" not in err and "`sglang-shims list` shows all" in err
