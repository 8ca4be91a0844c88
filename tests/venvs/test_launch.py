"""``python -m sglang_shims.launch``: argument handling, and the shims in every child
process where no ``.pth`` is processed (a ``pip install --target`` folder on PYTHONPATH)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from sglang_shims.launch import SGLANG_ENTRY, Plan, UsageError, parse

from ..support.packages import write_package
from ..support.programs import program
from ..support.run import REPO, Result, clean_env
from ..support.venvs import FAKE_SGLANG, Venv, pip_install, sh


class TestParse:
    def test_sglang_arguments_pass_through(self) -> None:
        plan = parse(["--model-path", "X", "--port", "30000"], {})
        assert (plan.kind, plan.target, plan.argv) == ("module", SGLANG_ENTRY,
                                                       ["--model-path", "X", "--port", "30000"])
        assert plan.env == {}

    def test_our_options_then_script(self, tmp_path: Path) -> None:
        script = tmp_path / "run.py"
        script.write_text("")
        plan = parse(["--enable", "a,b", "--disable=c", "--strict", "--report-dir", "/r",
                      "--log", "info", str(script), "--strict"], {})
        assert plan == Plan(env={"SGLANG_SHIMS_ENABLE": "a,b", "SGLANG_SHIMS_DISABLE": "c",
                                 "SGLANG_SHIMS_STRICT": "1", "SGLANG_SHIMS_REPORT_DIR": "/r",
                                 "SGLANG_SHIMS_LOG": "info"},
                            kind="script", target=str(script), argv=["--strict"])

    def test_module_and_double_dash(self) -> None:
        plan = parse(["--strict", "--", "-m", "pkg.mod", "--enable", "x"], {})
        assert (plan.kind, plan.target, plan.argv) == ("module", "pkg.mod", ["--enable", "x"])

    def test_ids_merge_with_the_environment(self) -> None:
        plan = parse(["--disable", "b"], {"SGLANG_SHIMS_DISABLE": "a"})
        assert plan.env["SGLANG_SHIMS_DISABLE"] == "a,b"

    def test_help_and_errors(self) -> None:
        assert parse(["--help"], {}).help
        assert parse(["--", "--help"], {}).argv == ["--help"]  # sglang's help
        with pytest.raises(UsageError):
            parse(["--enable"], {})
        with pytest.raises(UsageError):
            parse(["-m"], {})


SPAWNER = program("venvs/launch_spawner")


@pytest.fixture
def target_install(wheel: Path, tmp_path: Path, make_venv: Callable[[], Venv],
                   standin_kernel: Callable[..., Path]) -> tuple[Venv, str]:
    """A venv that does NOT have sglang-shims; the package lives in a --target folder."""
    venv = make_venv()
    target = tmp_path / "target"
    sh(sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check",
       "--target", target, wheel)
    assert (target / "sglang_shims.pth").is_file()  # copied, but never processed there
    world = write_package(tmp_path / "world", dict(FAKE_SGLANG))
    for item in standin_kernel("0.3.18").iterdir():
        dest = world / item.name
        shutil.copytree(item, dest) if item.is_dir() else shutil.copy(item, dest)
    # the user's own sitecustomize must keep running (our bootstrap chains to it)
    (world / "sitecustomize.py").write_text(
        "import os\nos.environ['USER_SITECUSTOMIZE_RAN'] = '1'\n")
    (tmp_path / "spawner.py").write_text(SPAWNER)
    return venv, f"{target}:{world}"


def run_in(venv: Venv, pythonpath: str, *args: str, **env: str) -> dict[str, dict[str, str]]:
    result = subprocess.run([str(venv.python), *args], capture_output=True, text=True,
                            env=clean_env(PYTHONPATH=pythonpath, **env), timeout=300,
                            check=False, cwd=Path(pythonpath.split(":", maxsplit=1)[0]).parent)
    assert result.returncode == 0, result.stderr
    data = Result.of(result).json()
    assert isinstance(data, dict)
    return data


@pytest.mark.venv
def test_target_install_plain_run_is_stock(target_install: tuple[Venv, str]) -> None:
    venv, path = target_install
    data = run_in(venv, path, "spawner.py")
    assert data["parent"]["outcome"] == data["child"]["outcome"] == "stock"
    assert data["child"]["user_site"] == "1"


@pytest.mark.venv
def test_launcher_patches_parent_and_spawned_child(target_install: tuple[Venv, str],
                                                   tmp_path: Path) -> None:
    venv, path = target_install
    reports = tmp_path / "reports"
    data = run_in(venv, path, "-m", "sglang_shims.launch", "--report-dir", str(reports),
                  "spawner.py")
    assert data["parent"]["outcome"] == data["child"]["outcome"] == "patched"
    assert data["parent"]["pid"] != data["child"]["pid"]
    assert data["parent"]["user_site"] == data["child"]["user_site"] == "1"  # chained
    status = subprocess.run(
        [str(venv.python), "-m", "sglang_shims", "status", "--json", "--report-dir",
         str(reports)], capture_output=True, text=True, env=clean_env(PYTHONPATH=path),
        check=False)
    summary = json.loads(status.stdout)
    assert summary["patches"]["sgl-kernel-fused-marlin-moe"]["verdict"] == \
        "applied in 2/2 processes"
    origins = sorted(p["origin"] for p in summary["processes"])
    assert origins == ["launch", "launch-site"]


@pytest.mark.venv
def test_launcher_toggles_reach_the_child(target_install: tuple[Venv, str]) -> None:
    venv, path = target_install
    data = run_in(venv, path, "-m", "sglang_shims.launch", "--disable",
                  "sgl-kernel-fused-marlin-moe", "spawner.py")
    assert data["parent"]["outcome"] == data["child"]["outcome"] == "stock"


@pytest.mark.venv
def test_launcher_module_form(target_install: tuple[Venv, str], tmp_path: Path) -> None:
    venv, path = target_install
    write_package(tmp_path / "world", {"spawnmod.py": SPAWNER})
    data = run_in(venv, path, "-m", "sglang_shims.launch", "-m", "spawnmod")
    assert data["parent"]["outcome"] == data["child"]["outcome"] == "patched"


@pytest.mark.venv
def test_bootstrap_does_not_leak_into_other_interpreters(target_install: tuple[Venv, str],
                                                        tmp_path: Path) -> None:
    """A child running another interpreter inherits PYTHONPATH: it must neither activate
    nor break, and the user's sitecustomize still runs."""
    venv, path = target_install
    # the base interpreter of the venv: same Python, another environment (sys.prefix)
    other = str(Path(sys.base_prefix) / "bin" / "python3")
    (tmp_path / "inner.py").write_text(
        "import json, os, sys\n"
        "print(json.dumps(['sglang_shims._bootstrap' in sys.modules,"
        " os.environ.get('USER_SITECUSTOMIZE_RAN')]))\n")
    (tmp_path / "other.py").write_text(
        "import json, subprocess\n"
        f"out = subprocess.run([{other!r}, {str(tmp_path / 'inner.py')!r}],"
        " capture_output=True, text=True)\n"
        "print(json.dumps({'parent': {'x': out.stdout.strip()}, 'child': {'err': out.stderr}}))\n")
    data = run_in(venv, path, "-m", "sglang_shims.launch", "other.py")
    assert json.loads(data["parent"]["x"]) == [False, "1"]
    assert data["child"]["err"] == ""


@pytest.mark.venv
def test_console_script_launch(wheel: Path, make_venv: Callable[[], Venv], tmp_path: Path,
                               standin_kernel: Callable[..., Path]) -> None:
    """`sglang-shims launch` in a normal install: the .pth already covers children."""
    from ..support.venvs import add_fake_sglang

    venv = make_venv()
    pip_install(venv, wheel)
    add_fake_sglang(venv, standin_kernel("0.3.18"))
    (tmp_path / "spawner.py").write_text(SPAWNER)
    result = sh(venv.root / "bin" / "sglang-shims", "launch", str(tmp_path / "spawner.py"),
                env=clean_env())
    data = Result.of(result).json()
    assert isinstance(data, dict)
    assert data["parent"]["outcome"] == data["child"]["outcome"] == "patched"
    assert "process reports go to" in result.stderr


# ------------------------------------------------------- the README's launcher lines

DUMP = ("import json, os, sys\n"
        "print('DUMP ' + json.dumps({'argv': sys.argv[1:], 'env': {k: v for k, v in "
        "os.environ.items() if k in ('SGLANG_SHIMS_STRICT', 'SGLANG_SHIMS_DISABLE')}}))\n")
LAUNCH_LINE = re.compile(r"^\s*(?:\$ )?(python -m sglang_shims\.launch|sglang-shims launch)"
                         r"(?P<args>[^#]*)")


def readme_launch_lines() -> list[str]:
    """Every line of a README code block that invokes the launcher, as written."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```[^\n]*\n(.*?)^```", readme, re.MULTILINE | re.DOTALL)
    return [line.strip() for block in blocks for line in block.splitlines()
            if LAUNCH_LINE.match(line)]


def concrete(args: str, tmp: Path) -> list[str]:
    """The README's placeholders made real: a patch id, a script, a module, sglang's args."""
    words = {"ID": "sgl-kernel-fused-marlin-moe", "script.py": str(tmp / "script.py"),
             "package.module": "pkgx.modx", "ARGS...": "a1 --flag", "...": "--model-path m"}
    out: list[str] = []
    for word in args.split():
        out += words.get(word, word).split()
    return out or ["--model-path", "m"]  # `sglang-shims launch ...`: the first line's args


def launch_outcome(tmp: Path, *entry: str, args: list[str]) -> dict[str, object]:
    env = clean_env(PYTHONPATH=os.pathsep.join([str(REPO), str(tmp / "world")]),
                    SGLANG_SHIMS_REPORT_DIR=str(tmp / "reports"))
    proc = subprocess.run([sys.executable, *entry, *args], capture_output=True, text=True,
                          env=env, cwd=tmp, timeout=120, check=False)
    assert proc.returncode == 0, (entry, args, proc.stderr)
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("DUMP "))
    data: dict[str, object] = json.loads(line[5:])
    return data


def test_every_readme_launcher_line_runs_both_ways(tmp_path: Path) -> None:
    """`sglang-shims launch X` is `python -m sglang_shims.launch X` for every README form:
    dispatched before argparse, our options become variables, the target gets the rest."""
    lines = readme_launch_lines()
    assert len(lines) >= 5 and any(ln.startswith("sglang-shims launch") for ln in lines)
    write_package(tmp_path / "world", {"sglang/__init__.py": "", "sglang/launch_server.py": DUMP,
                                       "pkgx/__init__.py": "", "pkgx/modx.py": DUMP})
    (tmp_path / "script.py").write_text(DUMP)
    for line in lines:
        m = LAUNCH_LINE.match(line)
        assert m is not None
        args = concrete(m.group("args"), tmp_path)
        module = launch_outcome(tmp_path, "-m", "sglang_shims.launch", args=args)
        cli = launch_outcome(tmp_path, "-m", "sglang_shims", "launch", args=args)
        assert module == cli, line
        after = args[args.index("--") + 1:] if "--" in args else args
        expected = after[2:] if after[:1] == ["-m"] else \
            after[1:] if after[0].endswith(".py") else after
        expected = [a for a in expected if a not in ("--strict",)] if "--" not in args else expected
        assert module["argv"] == expected, line
        if "--strict" in args[:args.index("--")] if "--" in args else False:
            assert module["env"] == {"SGLANG_SHIMS_STRICT": "1",
                                     "SGLANG_SHIMS_DISABLE": "sgl-kernel-fused-marlin-moe"}


def test_launch_help_both_ways() -> None:
    for entry in (["-m", "sglang_shims.launch"], ["-m", "sglang_shims", "launch"]):
        proc = subprocess.run([sys.executable, *entry, "--help"], capture_output=True,
                              text=True, env=clean_env(PYTHONPATH=str(REPO)), timeout=60,
                              check=False)
        assert proc.returncode == 0 and "--report-dir DIR" in proc.stdout, proc.stderr
        assert "``" not in proc.stdout  # plain text, not the docstring's reST


def run_launcher(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "sglang_shims", "launch", *args],
                          capture_output=True, text=True, cwd=tmp, timeout=120, check=False,
                          env=clean_env(PYTHONPATH=str(REPO),
                                        SGLANG_SHIMS_REPORT_DIR=str(tmp / "reports")))


def test_missing_sglang_is_one_line_with_the_remedy(tmp_path: Path) -> None:
    """No sglang installed (as in this test environment): not a runpy traceback."""
    import importlib.util

    if importlib.util.find_spec("sglang") is not None:
        pytest.skip("sglang is installed here")
    proc = run_launcher(tmp_path, "--model-path", "m")
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    [line] = [ln for ln in proc.stderr.splitlines() if ln.startswith("sglang-shims launch:")]
    assert "sglang is not installed" in line and "pip install sglang" in line
    proc = run_launcher(tmp_path, "-m", "no_such_module_here")
    assert proc.returncode == 1 and "no module named no_such_module_here" in proc.stderr
    proc = run_launcher(tmp_path, "missing.py")
    assert proc.returncode == 1 and "no such script: missing.py" in proc.stderr


def test_dash_c_runs_code_with_the_shims(tmp_path: Path) -> None:
    proc = run_launcher(tmp_path, "--strict", "-c",
                        "import os, sys; from sglang_shims import _bootstrap as b; "
                        "print(sys.argv, os.environ['SGLANG_SHIMS_STRICT'], b.active())",
                        "x", "-y")
    assert proc.returncode == 0, proc.stderr
    argv, strict, origin = proc.stdout.strip().rsplit(" ", 2)
    assert (argv, strict) == ("['-c', 'x', '-y']", "1") and origin != "None"
    assert parse(["-c", "pass", "a"], {}) == Plan(kind="code", target="pass", argv=["a"])
    with pytest.raises(UsageError):
        parse(["-c"], {})
