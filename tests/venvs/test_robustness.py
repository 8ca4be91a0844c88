"""Interpreter start never breaks, and nothing is ever written outside report folders.

Real venvs with the wheel installed, damaged on purpose the ways installs get damaged.
``python -c pass``, ``pip --version`` and ``python -m sglang.launch_server --help`` must
keep working and stay silent; the problem is reported once, on stderr, and only when a
watched module is imported.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from ..support.programs import program
from ..support.run import clean_env
from ..support.venvs import Venv, add_fake_sglang, pip_install, sh

pytestmark = pytest.mark.venv

LAUNCH_SERVER = program("venvs/tree/launch_server")


@pytest.fixture
def installed(wheel: Path, make_venv: Callable[[], Venv],
              standin_kernel: Callable[..., Path]) -> Venv:
    venv = make_venv()
    pip_install(venv, wheel, "pip")
    add_fake_sglang(venv, standin_kernel("0.3.18"))
    (venv.site / "sglang" / "launch_server.py").write_text(LAUNCH_SERVER)
    return venv


def assert_start_is_clean(venv: Venv) -> None:
    for args in (["-c", "pass"], ["-m", "pip", "--version"]):
        out = venv.run(*args)
        assert out.returncode == 0, (args, out.stderr)
        assert "sglang-shims" not in out.stderr, (args, out.stderr)


def break_manifest(venv: Venv) -> str:
    # processes read the built-in catalog from catalog.jsonl, the manifests only without it
    (venv.site / "sglang_shims/catalog/catalog.jsonl").write_text("{")
    (venv.site / "sglang_shims/patches/sgl-kernel-dist-renamed/manifest.toml").write_text(
        "id = = this is not toml")
    return "patch sgl-kernel-dist-renamed not loaded"


def break_wrapt(venv: Venv) -> str:
    for path in venv.site.glob("wrapt*"):
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    # a patch that needs wrapt, on the import every launch takes
    extra = venv.root / "extra" / "needs-wrapt"
    extra.mkdir(parents=True)
    (extra / "manifest.toml").write_text(
        'id = "needs-wrapt"\nsummary = "wraps with wrapt"\n'
        'evidence = ["https://example.org/x"]\n[target]\nmodule = "sgl_kernel"\n'
        '[retire]\nwhen = "never"\ninstalled = ["no-such-dist-xyz"]\n')
    (extra / "patch.py").write_text(
        "def apply(ctx):\n    ctx.wrap(ctx.module, 'rmsnorm', lambda w, i, a, k: w(*a, **k))\n")
    return ("needs-wrapt: failed (needs-wrapt/patch.py:2: ModuleNotFoundError: No module named"
            " 'wrapt'")


def break_resources(venv: Venv) -> str:
    # failing for our package only: pip 23 (a fresh venv's, before any upgrade) asks
    # importlib.resources for its own files at `pip --version`, which this test runs
    (venv.site / "00_break_resources.pth").write_text(
        "import importlib.resources as r; r.files = (lambda files: lambda pkg, *a, **k: 1 / 0"
        " if str(getattr(pkg, '__name__', pkg)).startswith('sglang_shims')"
        " else files(pkg, *a, **k))(r.files)\n")
    # an installed package's patches are read from its own folder, without asking
    # importlib.resources (tests/process/test_wake.py): its failure changes nothing to report
    return ""


@pytest.mark.parametrize("damage", [break_manifest, break_wrapt, break_resources],
                         ids=["manifest corrupted", "wrapt uninstalled",
                              "importlib.resources failing"])
def test_damaged_install(installed: Venv, damage: Callable[[Venv], str]) -> None:
    message = damage(installed)
    env = {"SGLANG_SHIMS_PATH": str(installed.root / "extra")} \
        if (installed.root / "extra").exists() else {}
    assert_start_is_clean(installed)
    out = installed.run("-m", "sglang.launch_server", "--help", **env)
    assert out.returncode == 0, out.stderr
    assert "usage: launch_server" in out.stdout
    if message:
        assert out.stderr.count(message) == 1, out.stderr
    else:
        assert "sglang-shims" not in out.stderr, out.stderr


def test_bootstrap_deleted(installed: Venv) -> None:
    (installed.site / "sglang_shims" / "_bootstrap.py").unlink()
    shutil.rmtree(installed.site / "sglang_shims" / "__pycache__", ignore_errors=True)
    assert_start_is_clean(installed)
    out = installed.run("-m", "sglang.launch_server", "--help")
    assert out.stderr.count("sglang-shims: start-up hook failed") == 1
    # without the bootstrap the patch cannot act: sglang's own error is what follows
    assert "cannot import name 'fused_marlin_moe'" in out.stderr


def tree_digest(root: Path) -> dict[str, str]:
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink():
            out[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


SPAWNER = program("venvs/patched_spawner")


def _record_paths(venv: Venv) -> set[str]:
    """The files pip recorded for every distribution in the venv, relative to the venv."""
    listed = set()
    for record in venv.site.glob("*.dist-info/RECORD"):
        for line in record.read_text(encoding="utf-8").splitlines():
            rel = line.rsplit(",", 2)[0]
            if rel:
                path = (venv.site / rel).resolve()
                listed.add(str(path.relative_to(venv.root.resolve())))
    return listed


def test_nothing_written_outside_report_dir(wheel: Path, make_venv: Callable[[], Venv],
                                            standin_kernel: Callable[..., Path],
                                            tmp_path: Path) -> None:
    """Install, import, patch, launcher with a spawned child, revert, list, doctor (with its
    import probe): the install writes only the files its RECORD lists; after it the venv
    (site-packages and the sglang install included), the user's home and the temp dir are
    byte-for-byte what they were; the only files written are the reports asked for."""
    home, tmp = tmp_path / "home", tmp_path / "tmp"
    home.mkdir()
    tmp.mkdir()
    env = {k: v for k, v in clean_env(PYTHONDONTWRITEBYTECODE="1").items()
           if not k.startswith("XDG_")}  # home-relative defaults for every cache
    env.update(HOME=str(home), TMPDIR=str(tmp))
    venv = make_venv()
    before_install = tree_digest(venv.root)
    pip_install(venv, wheel, "pip")
    after_install = tree_digest(venv.root)
    changed = {p for p, h in after_install.items() if before_install.get(p) != h}
    assert not set(before_install) - set(after_install)  # nothing removed
    assert changed <= _record_paths(venv), sorted(changed - _record_paths(venv))[:10]

    add_fake_sglang(venv, standin_kernel("0.3.18"))
    (venv.site / "sglang" / "launch_server.py").write_text(LAUNCH_SERVER)
    script = tmp_path / "spawner.py"
    script.write_text(SPAWNER)
    reports = tmp_path / "reports"
    sh(venv.python, "-m", "compileall", "-q", venv.site, env=env)  # the interpreter's own .pyc
    before = tree_digest(venv.root)
    runs = [
        [str(venv.python), str(script)],
        [str(venv.python), "-m", "sglang_shims.launch", "--report-dir", str(reports),
         str(script)],
        [str(venv.root / "bin" / "sglang-shims"), "list", "--json"],
        [str(venv.root / "bin" / "sglang-shims"), "doctor", "--json"],
    ]
    for cmd in runs:
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300,
                             check=False)
        assert out.returncode in (0, 1), (cmd, out.stderr)
    assert tree_digest(venv.root) == before
    assert tree_digest(home) == {}, "written into the user's home"
    assert tree_digest(tmp) == {}, "left in the temp dir"
    written = sorted(p.name for p in reports.iterdir() if p.name != "launch.json")
    assert len(written) == 2 and all(n.endswith(".json") for n in written)  # parent + child
    assert json.loads((reports / "launch.json").read_text())["failed"] is None  # the launcher's
    assert not [p for p in Path(tmp_path).rglob("*.tmp")]
    data = [json.loads((reports / n).read_text()) for n in written]
    assert {d["patches"]["sgl-kernel-fused-marlin-moe"]["state"] for d in data} <= {
        "applied", "reverted"}
