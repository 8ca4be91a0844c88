"""``sglang-shims new``: the scaffold is valid everywhere but its evidence, so an unfinished
patch fails ``check`` (naming the field) instead of passing; bad input writes nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from sglang_shims.catalog import load as _catalog
from sglang_shims.catalog import schema
from sglang_shims.catalog.manifest import ManifestError
from sglang_shims.catalog.validate import load_text
from sglang_shims.cli import main
from sglang_shims.testing.inprocess import ShimPatch

from ..support.run import REPO, clean_env, need

TARGET = "hypothesis.core"  # a test dependency: installed wherever the suite runs
DIST = "hypothesis"


def new(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["new", *args])
    out, err = capsys.readouterr()
    return code, out, err


def written(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SGLANG_SHIMS_PATH", raising=False)
    return tmp_path


def test_writes_the_folder_and_a_test(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = new(capsys, "my-fix", "--target", TARGET, "--json")
    assert code == 0
    data = json.loads(out)
    assert data["schema"] == 1 and data["id"] == "my-fix" and data["when"] == "after"
    assert data["distribution"] == {"name": DIST, "version": metadata.version(DIST)}
    assert written(here) == ["patches/my-fix/README.md", "patches/my-fix/manifest.toml",
                             "patches/my-fix/patch.py", "tests/patches/test_my_fix.py"]
    assert data["files"]["test"] == "tests/patches/test_my_fix.py"
    assert "sglang-shims check" in data["next"][0]


def test_the_manifest_is_invalid_until_evidence_is_listed(
        here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    new(capsys, "my-fix", "--target", TARGET, "--when", "before")
    folder = here / "patches" / "my-fix"
    text = (folder / "manifest.toml").read_text()
    assert "TODO" not in text
    with pytest.raises(ManifestError, match="evidence must list at least one https:// URL"):
        load_text(text, "m", folder, "extra")
    filled = text.replace("evidence = []", 'evidence = ["https://example.org/issue/1"]')
    manifest = load_text(filled, "m", folder, "extra")
    version = metadata.version(DIST)
    assert (manifest.target, manifest.when, manifest.code) == (TARGET, "before", "patch.py")
    assert [(g.dists, g.spec) for g in manifest.requires] == [((DIST,), f"=={version}")]
    assert [(g.dists, g.spec) for g in manifest.retire.versions] == [((DIST,), f">{version}")]


def test_check_reports_the_unfinished_patch(here: Path, capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    new(capsys, "my-fix", "--target", TARGET)
    monkeypatch.setenv("SGLANG_SHIMS_PATH", str(here / "patches"))
    assert main(["check", "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert "evidence must list" in data["not_loaded"]["my-fix"]
    finish_evidence(here / "patches" / "my-fix")
    main(["check", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert "my-fix" not in data["not_loaded"]
    assert {"id": "my-fix", "state": "would-apply"}.items() <= next(
        c for c in data["checked"] if c["id"] == "my-fix").items()


def test_the_schema_flags_only_the_evidence(here: Path, capsys: pytest.CaptureFixture[str]
                                            ) -> None:
    """An editor reading the ``#:schema`` line shows the one thing left to fill in."""
    need("jsonschema")
    import jsonschema

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib

    new(capsys, "my-fix", "--target", TARGET)
    text = (here / "patches" / "my-fix" / "manifest.toml").read_text()
    directive = text.splitlines()[0]
    assert directive == f"#:schema {schema.path(_catalog.builtin_root()).resolve()}"
    validator = jsonschema.Draft7Validator(json.loads(Path(directive.split()[1]).read_text()))
    errors = list(validator.iter_errors(tomllib.loads(text)))
    assert [list(e.absolute_path) for e in errors] == [["evidence"]]


def finish_evidence(folder: Path) -> None:
    manifest = folder / "manifest.toml"
    manifest.write_text(manifest.read_text().replace(
        "evidence = []", 'evidence = ["https://example.org/issue/1"]'))


def test_the_skeleton_retires_in_process(here: Path, capsys: pytest.CaptureFixture[str],
                                         shim_patch: ShimPatch) -> None:
    """patch.py is a real patch that says it is a skeleton, through the real engine."""
    new(capsys, "my-fix", "--target", TARGET)
    finish_evidence(here / "patches" / "my-fix")
    record = shim_patch(here / "patches" / "my-fix", "", versions={DIST: "1.0"})
    assert record.state == "not-applicable"  # the gate: the version it was written on
    record = shim_patch(here / "patches" / "my-fix", "",
                        versions={DIST: metadata.version(DIST).partition("+")[0]})
    assert (record.state, record.reason) == (
        "retired", "patch.py is still the skeleton `sglang-shims new` wrote")


def test_the_generated_test_runs_and_fails_until_written(
        here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The test and the code lint clean, and the test fails (the patch retires) until
    apply() is written: one fresh pytest, as the author would run it."""
    new(capsys, "my-fix", "--target", TARGET)
    finish_evidence(here / "patches" / "my-fix")
    need("ruff")
    lint = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--config",
                           str(REPO / "pyproject.toml"), "patches", "tests"],
                          capture_output=True, text=True, check=False)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p",
         "sglang_shims.testing.pytest_plugin", "tests/patches/test_my_fix.py"],
        capture_output=True, text=True, check=False, timeout=120,
        env=clean_env(PYTHONPATH=str(REPO)))
    assert run.returncode == 1, run.stdout + run.stderr
    assert "1 failed" in run.stdout and "still the skeleton" in run.stdout, run.stdout


def test_the_test_finds_its_patch_from_anywhere(here: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = new(capsys, "my.fix", "--target", TARGET, "--folder", "extra/patches",
                       "--tests", "suite/deep/er", "--json")
    assert code == 0
    test = here / "suite" / "deep" / "er" / "test_my_fix.py"
    assert json.loads(out)["files"]["test"] == "suite/deep/er/test_my_fix.py"
    line = next(x for x in test.read_text().splitlines() if x.startswith("PATCH = "))
    found: dict[str, object] = {"__file__": str(test)}
    exec("from pathlib import Path\n" + line, found)
    assert found["PATCH"] == here / "extra" / "patches" / "my.fix"
    assert line == ('PATCH = Path(__file__).resolve().parents[3] / "extra" / "patches"'
                    ' / "my.fix"')


@pytest.mark.parametrize(("args", "message"), [
    (("Bad_Id", "--target", TARGET), "invalid patch id"),
    (("x-", "--target", TARGET), "invalid patch id"),
    (("ok-id", "--target", "pkg..mod"), "is not a module name"),
    (("ok-id", "--target", "pkg.class"), "is not a module name"),
    (("ok-id", "--target", "json.decoder"), "standard library"),
    (("ok-id", "--target", "no_such_package_xyz.mod"), "no installed distribution"),
    (("sgl-kernel-dist-renamed", "--target", TARGET), "is taken"),
])
def test_refusals_write_nothing(here: Path, capsys: pytest.CaptureFixture[str],
                                args: tuple[str, ...], message: str) -> None:
    code, out, err = new(capsys, *args)
    assert (code, out, written(here)) == (2, "", [])
    assert err.startswith("sglang-shims new: ") and message in err


def test_an_existing_folder_or_test_is_never_overwritten(
        here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert new(capsys, "my-fix", "--target", TARGET)[0] == 0
    (here / "patches" / "my-fix" / "patch.py").write_text("# mine\n")
    code, _, err = new(capsys, "my-fix", "--target", TARGET)
    assert code == 2 and "patches/my-fix exists" in err
    assert (here / "patches" / "my-fix" / "patch.py").read_text() == "# mine\n"
    code, _, err = new(capsys, "my-fix", "--target", TARGET, "--folder", "other")
    assert code == 2 and "test_my_fix.py exists" in err and not (here / "other").exists()


def test_the_text_lists_the_files_then_the_numbered_steps() -> None:
    from sglang_shims.cli import new

    data = {"id": "demo-patch", "target": "pkg.mod", "when": "after",
            "files": {"manifest": "/x/manifest.toml", "patch": "/x/patch.py"},
            "next": ["evidence", "the range"]}
    assert new.text(data).splitlines() == [
        "created patch demo-patch (target pkg.mod, after its body runs):",
        "  /x/manifest.toml", "  /x/patch.py", "", "next:", "  1. evidence", "  2. the range"]
