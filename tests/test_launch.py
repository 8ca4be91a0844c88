"""``python -m sglang_shims.launch``: argument handling, and the shims in every child
process where no ``.pth`` is processed (a ``pip install --target`` folder on PYTHONPATH)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from sglang_shims.launch import SGLANG_ENTRY, Plan, UsageError, parse

from .conftest import FAKE_SGLANG, Venv, clean_env, pip_install, sh, write_package


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


SPAWNER = """\
import json, multiprocessing as mp, os, sys


def probe():
    try:
        import sglang.srt.layers.quantization.gptq  # noqa: F401
        outcome = "patched"
    except ImportError:
        outcome = "stock"
    return {"pid": os.getpid(), "outcome": outcome,
            "user_site": os.environ.get("USER_SITECUSTOMIZE_RAN")}


def child(queue):
    queue.put(probe())


if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=child, args=(queue,))
    proc.start()
    kid = queue.get(timeout=120)
    proc.join(60)
    print(json.dumps({"parent": probe(), "child": kid}))
"""


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
    data: dict[str, dict[str, str]] = json.loads(result.stdout.strip().splitlines()[-1])
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
    from .conftest import add_fake_sglang

    venv = make_venv()
    pip_install(venv, wheel)
    add_fake_sglang(venv, standin_kernel("0.3.18"))
    (tmp_path / "spawner.py").write_text(SPAWNER)
    result = sh(venv.root / "bin" / "sglang-shims", "launch", str(tmp_path / "spawner.py"),
                env=clean_env())
    data = json.loads(result.stdout.strip().splitlines()[-1])
    assert data["parent"]["outcome"] == data["child"]["outcome"] == "patched"
    assert "process reports go to" in result.stderr
