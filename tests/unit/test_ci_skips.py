"""The CI skip policy (tests/support/ci_skips.py): every allowed skip is an external absence, and
an unlisted skip -- at run time or at module import -- fails a run under SGLANG_SHIMS_CI=1."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from ..support.ci_skips import CI_ALLOWED_SKIPS, allowed
from ..support.programs import program
from ..support.run import REPO, clean_env

TESTS = REPO / "tests"


def test_allow_list_is_short_and_external() -> None:
    # Each entry names a thing the machine lacks, never our code or a pip package that
    # .ci/run installs (torch, triton, transformers, uv, hypothesis ...).
    assert len(CI_ALLOWED_SKIPS) <= 5
    installed_by_ci = ("torch", "triton", "transformers", "sglang", "uv", "hypothesis",
                       "numpy", "wheel", "cache", "sglang_shims", "import")
    for prefix, why in CI_ALLOWED_SKIPS:
        assert why, prefix
        words = set(re.findall(r"[\w+]+", prefix.lower()))
        assert not words & set(installed_by_ci), prefix


def test_every_allowed_reason_is_used_by_a_test() -> None:
    """No stale entry: each prefix is the start of a skip reason some test (or a fixture
    of tests/support or sglang_shims.testing) gives."""
    files = [*TESTS.rglob("test_*.py"), *(TESTS / "support").glob("*.py"),
             *(TESTS.parent / "sglang_shims" / "testing").glob("*.py")]
    sources = "\n".join(p.read_text(encoding="utf-8") for p in files)
    for prefix, _ in CI_ALLOWED_SKIPS:
        assert re.search(r"""["']""" + re.escape(prefix), sources), prefix


@pytest.mark.parametrize(("reason", "ok"), [
    ("no CUDA GPU: compiled-kernel tests need one", True),
    ("Skipped: nvcc is not installed: cannot compile", True),
    ("torch is not installed (pip install -r tests/requirements/serving.txt)", False),
    ("triton is not importable here (NameError: name 'x' is not defined)", False),
    ("sglang's runtime dependencies are missing here: ModuleNotFoundError", False),
    ("the installed no CUDA GPU", False),  # a prefix, not a substring
])
def test_allowed(reason: str, ok: bool) -> None:
    assert allowed(reason) is ok


SAMPLE = program("ci_skips/skips")
MODULE_SKIP = program("ci_skips/module_skip")


def _pytest(tmp_path: Path, text: str, ci: bool) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_sample.py").write_text(text, encoding="utf-8")
    env = clean_env(PYTHONPATH=str(REPO), **({"SGLANG_SHIMS_CI": "1"} if ci else {}))
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:xdist", "-p", "no:cacheprovider",
         "-p", "tests.support.ci_skips", "-rA", "-q", "-o", "addopts=", "--rootdir", str(tmp_path),
         str(tmp_path)], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120,
        check=False)


def test_unlisted_skips_fail_in_ci(tmp_path: Path) -> None:
    result = _pytest(tmp_path, SAMPLE, ci=True)
    out = result.stdout
    assert result.returncode == 1, out
    assert re.search(r"FAILED .*test_unlisted", out), out
    assert re.search(r"SKIPPED .*no CUDA GPU", out), out
    assert "not on CI_ALLOWED_SKIPS" in out
    assert re.search(r"1 failed, 1 passed, 1 skipped, 1 xfailed", out), out


def test_module_level_skip_fails_in_ci(tmp_path: Path) -> None:
    result = _pytest(tmp_path, MODULE_SKIP, ci=True)
    assert result.returncode != 0, result.stdout
    assert re.search(r"ERROR .*test_sample.py", result.stdout), result.stdout
    assert "not on CI_ALLOWED_SKIPS" in result.stdout


@pytest.mark.parametrize(("text", "code", "summary"), [
    (SAMPLE, 0, "1 passed, 2 skipped, 1 xfailed"),
    (MODULE_SKIP, 5, "1 skipped"),  # 5: nothing ran, the module was skipped
], ids=["runtime", "module"])
def test_skips_stay_skips_outside_ci(tmp_path: Path, text: str, code: int, summary: str) -> None:
    result = _pytest(tmp_path, text, ci=False)
    assert result.returncode == code, result.stdout
    assert summary in result.stdout, result.stdout


def test_subprocesses_use_the_sessions_temp_dir(tmp_path_factory: pytest.TempPathFactory
                                                ) -> None:
    """Nothing a test's subprocess puts under the temp dir lands in the shared /tmp."""
    result = subprocess.run([sys.executable, "-c", "import tempfile; print(tempfile.gettempdir())"],
                            env=clean_env(), capture_output=True, text=True, check=True)
    temp = Path(result.stdout.strip())
    assert temp.is_relative_to(tmp_path_factory.getbasetemp().parent), temp
    assert temp != Path("/tmp")


def test_ci_runs_the_readme_test_command() -> None:
    """The line the README gives a new user is the line CI runs, and it installs the
    requirements the suite needs (torch, sglang's runtime dependencies) itself."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    (line,) = [ln for ln in readme.splitlines() if ln.endswith("&& python -m pytest")]
    assert "-r tests/requirements/serving.txt" in line and "'.[test]'" in line
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()
    assert ci[-1] == line
