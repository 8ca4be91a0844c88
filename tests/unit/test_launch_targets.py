"""The launcher's reading of its command line and of what it is asked to run, in-process:
options parsed as sglang's argparse would leave them, targets judged as ``python TARGET``
would, and the report folder settled before anything runs."""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path

import pytest

from sglang_shims import launch
from sglang_shims.launch import SGLANG_ENTRY, Plan, UsageError, parse, target_problem


@pytest.mark.parametrize("argv", [
    ["--chat-template=tpl.py", "--model-path", "X"],
    ["--chat-template", "tpl.py", "--model-path", "X"],
    ["-tpl.py"],
])
def test_an_option_ending_in_py_is_sglangs(argv: list[str], tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "--chat-template=tpl.py").write_text("")  # even when such a file exists
    plan = parse(argv, {})
    assert (plan.kind, plan.target, plan.argv) == ("module", SGLANG_ENTRY, argv)


@pytest.mark.parametrize("option", ["--enable", "--disable"])
def test_an_empty_inline_id_list_takes_nothing_more(option: str) -> None:
    plan = parse([f"{option}=", "--model-path", "X"], {})
    assert plan.argv == ["--model-path", "X"]
    assert plan.env == {f"SGLANG_SHIMS_{option[2:].upper()}": ""}


def test_an_empty_inline_id_list_keeps_the_environments() -> None:
    plan = parse(["--disable=", "--port", "1"], {"SGLANG_SHIMS_DISABLE": "a"})
    assert plan.env == {"SGLANG_SHIMS_DISABLE": "a"} and plan.argv == ["--port", "1"]


@pytest.mark.parametrize("option", ["--report-dir", "--log"])
@pytest.mark.parametrize("value", ["", "  "])
def test_an_empty_value_is_a_usage_error(option: str, value: str) -> None:
    with pytest.raises(UsageError, match=f"{option} needs a value"):
        parse([f"{option}={value}", "--model-path", "X"], {})


def test_a_value_starting_with_a_dash_is_still_the_value() -> None:
    plan = parse(["--report-dir", "-r", "--port", "1"], {})
    assert plan.env == {"SGLANG_SHIMS_REPORT_DIR": "-r"} and plan.argv == ["--port", "1"]


def test_a_folder_or_zip_is_a_program(tmp_path: Path) -> None:
    folder = tmp_path / "app"
    folder.mkdir()
    assert parse([str(folder), "a"], {}) == Plan(kind="script", target=str(folder), argv=["a"])
    assert target_problem(parse([str(folder)], {})) == (
        f"{folder} is a folder without __main__.py: name a script in it, or run a package"
        " with -m PACKAGE")
    (folder / "__main__.py").write_text("")
    assert target_problem(parse([str(folder)], {})) is None
    archive = tmp_path / "app.zip"
    with zipfile.ZipFile(archive, "w") as out:
        out.writestr("other.py", "")
    assert target_problem(parse([str(archive)], {})) == (
        f"{archive} is a zip archive without __main__.py")
    with zipfile.ZipFile(archive, "w") as out:
        out.writestr("__main__.py", "")
    assert target_problem(parse([str(archive)], {})) is None


def test_a_binary_file_is_not_a_script(tmp_path: Path) -> None:
    binary = tmp_path / "tool"
    binary.write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(64))
    assert target_problem(parse([str(binary)], {})) == (
        f"{binary} is not a Python script (it holds binary data)")
    script = tmp_path / "tool2"
    script.write_text("print('hi')\n")
    assert target_problem(parse([str(script)], {})) is None
    assert target_problem(parse([str(tmp_path / "gone.py")], {})) == (
        f"no such script: {tmp_path / 'gone.py'}")


class Env(dict[str, str]):
    """A stand-in for ``os.environ`` (``_prepare_report_dir`` only reads and sets keys)."""


def test_a_report_dir_that_cannot_be_a_folder_stops_the_launch(tmp_path: Path) -> None:
    afile = tmp_path / "file"
    afile.write_text("")
    for bad in (afile, afile / "sub"):
        environ = Env(SGLANG_SHIMS_REPORT_DIR=str(bad))
        problem = launch._prepare_report_dir(environ)  # type: ignore[arg-type]
        assert problem is not None and problem.startswith(f"cannot keep process reports in {bad}")
        assert problem.endswith("name a folder of yours with --report-dir DIR")


def test_a_shared_report_dir_stops_the_launch(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    problem = launch._prepare_report_dir(Env(SGLANG_SHIMS_REPORT_DIR=str(shared)))  # type: ignore[arg-type]
    assert problem is not None and "world-writable" in problem


def test_a_relative_report_dir_is_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    environ = Env(SGLANG_SHIMS_REPORT_DIR="reports")
    assert launch._prepare_report_dir(environ) is None  # type: ignore[arg-type]
    assert environ["SGLANG_SHIMS_REPORT_DIR"] == str(tmp_path / "reports")
    assert (tmp_path / "reports").is_dir()
    assert f"`sglang-shims status --report-dir {tmp_path / 'reports'}`" in capsys.readouterr().err


def test_a_squatted_user_folder_names_the_command_that_reads_the_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    squatted = tmp_path / f"sglang-shims-{os.geteuid()}"
    squatted.mkdir()
    os.chmod(squatted, 0o777)
    environ = Env()
    assert launch._prepare_report_dir(environ) is None  # type: ignore[arg-type]
    run = environ["SGLANG_SHIMS_REPORT_DIR"]
    assert not run.startswith(str(squatted) + os.sep)
    err = capsys.readouterr().err
    assert f"`sglang-shims status --report-dir {run}` summarises them" in err
    assert "`sglang-shims status` summarises" not in err


def test_the_launch_record_says_why_it_never_started(tmp_path: Path) -> None:
    plan = parse(["missing.py"], {})
    launch._record_launch(tmp_path, plan, "no such script: missing.py")
    record = json.loads((tmp_path / launch.LAUNCH_RECORD).read_text())
    assert record["failed"] == "no such script: missing.py"
    assert (record["kind"], record["target"]) == ("script", "missing.py")
    assert oct((tmp_path / launch.LAUNCH_RECORD).stat().st_mode & 0o777) == "0o600"


@pytest.mark.parametrize("origin", ["pth", "start", "launch-site"])
def test_children_need_no_help_where_the_hook_runs(origin: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the ``.pth`` (or ``.start``, or the launcher's own site folder) activated this
    process, children activate the same way: the environment is left as it is."""
    from sglang_shims import _bootstrap

    monkeypatch.setattr(_bootstrap, "active", lambda: origin)
    environ = {"PYTHONPATH": "/elsewhere"}
    assert launch.carry_into_children(environ) is False
    assert environ == {"PYTHONPATH": "/elsewhere"}


def test_children_get_the_bootstrap_folder_first_where_nothing_activated_us(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """No hook activated this process (the package imported from a folder on ``PYTHONPATH``,
    without its ``.pth``): the launcher's site folder and the folder holding the package go
    first on the
    children's ``PYTHONPATH``, each once, the caller's entries after them in their order."""
    from sglang_shims import _bootstrap

    monkeypatch.setattr(_bootstrap, "active", lambda: None)
    package_parent = str(Path(launch.__file__).resolve().parent.parent)
    environ = {"PYTHONPATH": os.pathsep.join(["/a", str(launch.SITE_DIR), "/b"])}
    assert launch.carry_into_children(environ) is True
    assert environ["PYTHONPATH"].split(os.pathsep) == [str(launch.SITE_DIR), package_parent,
                                                       "/a", "/b"]
    assert environ["SGLANG_SHIMS_LAUNCH_PREFIX"]
