"""Activation in fresh virtual environments: the .pth/.start files, installers, start cost.

These tests build the wheel once, install it the ways users do (pip, pip -e, uv), and
run plain interpreters in those environments: nothing is activated by hand here.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import sysconfig
from collections.abc import Callable
from pathlib import Path

import pytest

from sglang_shims.catalog import prose

from ..support.run import REPO
from ..support.venvs import Venv, add_fake_sglang, new_venv, pip_install, sh

pytestmark = pytest.mark.venv



IMPORT_AWQ = "import sglang.srt.layers.quantization.awq as m; print(m.fused_marlin_moe.__name__)"


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory,
              standin_kernel: Callable[..., Path]) -> Venv:
    """One venv with the wheel installed by pip and the fake sglang, for the tests that only
    run interpreters in it (they change nothing in it: no bytecode is written either)."""
    venv = new_venv(tmp_path_factory.mktemp("installed"))
    pip_install(venv, wheel)
    add_fake_sglang(venv, standin_kernel("0.3.18"))
    return venv


def test_pip_install_activates_and_uninstalls_cleanly(
        wheel: Path, make_venv: Callable[[], Venv], standin_kernel: Callable[..., Path]) -> None:
    venv = make_venv()
    pip_install(venv, wheel)
    assert (venv.site / "sglang_shims.pth").read_text().endswith("\nimport _sglang_shims_start\n")
    assert (venv.site / "sglang_shims.start").read_text() == "_sglang_shims_start:start\n"
    assert (venv.site / "_sglang_shims_start.py").is_file()
    assert not (venv.site / "patches").exists()
    assert (venv.site / "sglang_shims/patches/sgl-kernel-fused-marlin-moe/manifest.toml").is_file()
    # the prose ships beside the manifest (not in catalog.jsonl), and explain reads it there
    readme = venv.site / "sglang_shims/patches/sgl-kernel-fused-marlin-moe/README.md"
    assert (venv.site / "sglang_shims/patches/manifest.schema.json").is_file()
    shown = venv.run("-m", "sglang_shims", "explain", "sgl-kernel-fused-marlin-moe", "--json")
    assert json.loads(shown.stdout)["changes"] == prose.sections(readme.read_text())["changes"]

    add_fake_sglang(venv, standin_kernel("0.3.18"))
    ok = venv.run("-c", IMPORT_AWQ)
    assert ok.returncode == 0 and ok.stdout.strip() == "fused_marlin_moe", ok.stderr
    for env in ({"SGLANG_SHIMS": "0"},
                {"SGLANG_SHIMS_DISABLE": "sgl-kernel-fused-marlin-moe"},
                {"SGLANG_SHIMS_PATCH_SGL_KERNEL_FUSED_MARLIN_MOE": "0"}):
        stock = venv.run("-c", IMPORT_AWQ, **env)
        assert stock.returncode == 1, env
        assert "cannot import name 'fused_marlin_moe' from 'sgl_kernel'" in stock.stderr, env

    # python -I still processes site-packages .pth files
    isolated = venv.run("-I", "-c", IMPORT_AWQ)
    assert isolated.returncode == 0, isolated.stderr
    # python -S processes none: stock behaviour, documented
    assert venv.run("-S", "-c", f"import sys; sys.path.append({str(venv.site)!r}); "
                    + IMPORT_AWQ).returncode == 1

    sh(sys.executable, "-m", "pip", "--python", venv.python, "uninstall", "-y", "-q",
       "sglang-shims")
    assert venv.ours() == [], "uninstall left files behind"
    assert not list(venv.site.glob("__pycache__/_sglang_shims_start*")), "or its bytecode"


def test_nothing_of_ours_imported_at_start(installed: Venv, make_venv: Callable[[], Venv],
                                          tmp_path: Path) -> None:
    """The .pth line imports the start-up module beside it and nothing of the package, nor
    anything else: our package loads at the first watched import only, also with toggles or
    SGLANG_SHIMS_PATH set, whose warnings wait for that import too."""
    venv = installed
    extra = tmp_path / "extra"
    extra.mkdir(mode=0o700)
    loaded = "import sys; print(sorted(m for m in sys.modules if 'shims' in m))"
    bare = make_venv()  # what a venv without sglang-shims imports at start
    stock = {line.rpartition("|")[2].strip() for line in bare.run(
        "-X", "importtime", "-c", "pass").stderr.splitlines()}
    for env in ({}, {"SGLANG_SHIMS": "0"}, {"SGLANG_SHIMS_DISABLED": "x"},
                {"SGLANG_SHIMS_PATH": str(extra)}):
        out = venv.run("-X", "importtime", "-c", loaded, **env)
        assert out.stdout.strip() == "['_sglang_shims_start']", env
        imported = {line.rpartition("|")[2].strip() for line in out.stderr.splitlines()}
        assert imported - stock == {"_sglang_shims_start"}, env
        assert "warning" not in out.stderr.lower(), env
    woke = venv.run("-c", "import sgl_kernel; " + loaded)
    assert "'sglang_shims._bootstrap'" in woke.stdout and "'sglang_shims.engine'" in woke.stdout
    assert venv.run("-c", "import sgl_kernel; " + loaded, SGLANG_SHIMS="0").stdout.strip() \
        == "['_sglang_shims_start']"


def test_editable_install_activates(make_venv: Callable[[], Venv],
                                    standin_kernel: Callable[..., Path], tmp_path: Path) -> None:
    venv = make_venv()
    src = tmp_path / "src"
    shutil.copytree(REPO, src, ignore=shutil.ignore_patterns(".git", "*.pyc", "__pycache__",
                                                             ".venv*", "dist", "build", ".carry"))
    pip_install(venv, "-e", src)
    assert (venv.site / "sglang_shims.pth").is_file()
    assert (venv.site / "_sglang_shims_start.py").is_file()
    add_fake_sglang(venv, standin_kernel("0.3.18"))
    ok = venv.run("-c", IMPORT_AWQ + "; import sglang_shims; print(sglang_shims.__file__)")
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.split()[-1].startswith(str(src)), "editable install runs the source tree"
    # the checkout's patches are read where they are: nothing of the package is copied into
    # site-packages, where pip's uninstall would leave an empty `sglang_shims` folder behind
    # that Python imports as a namespace package
    assert not (venv.site / "sglang_shims").exists()
    listed = venv.run("-m", "sglang_shims", "list", "--json")
    assert listed.returncode == 0 and "sgl-kernel-missing-symbols" in listed.stdout, listed.stderr
    sh(sys.executable, "-m", "pip", "--python", venv.python, "uninstall", "-y", "-q",
       "sglang-shims")
    assert venv.ours() == [], "an uninstall leaves nothing of ours in site-packages"
    gone = venv.run("-I", "-c",  # -I: site-packages only, not this checkout
                    "import importlib.util as u; print(u.find_spec('sglang_shims'))")
    assert gone.stdout.strip() == "None", gone.stdout


@pytest.mark.skipif(shutil.which("uv") is None and not (
    Path(sysconfig.get_paths()["scripts"]) / "uv").exists(), reason="uv is not installed")
def test_uv_install_activates(wheel: Path, make_venv: Callable[[], Venv],
                              standin_kernel: Callable[..., Path]) -> None:
    uv = shutil.which("uv") or str(Path(sysconfig.get_paths()["scripts"]) / "uv")
    venv = make_venv()
    sh(uv, "pip", "install", "-q", "--python", venv.python, wheel)
    assert (venv.site / "sglang_shims.pth").is_file()
    add_fake_sglang(venv, standin_kernel("0.3.18"))
    ok = venv.run("-c", IMPORT_AWQ)
    assert ok.returncode == 0, ok.stderr


def test_spawned_children_are_patched(installed: Venv, tmp_path: Path) -> None:
    """Spawn and forkserver children run site again, so the .pth patches them too."""
    venv = installed
    script = tmp_path / "spawner.py"
    script.write_text(
        "import multiprocessing as mp, os\n"
        "def child(q):\n"
        "    import sglang_shims, sglang.srt.layers.quantization.gptq as g\n"
        "    q.put((os.getpid(), sglang_shims.status()['sgl-kernel-fused-marlin-moe']['state']))\n"
        "if __name__ == '__main__':\n"
        "    for method in ('spawn', 'forkserver'):\n"
        "        ctx = mp.get_context(method); q = ctx.Queue()\n"
        "        p = ctx.Process(target=child, args=(q,)); p.start(); p.join(60)\n"
        "        pid, state = q.get(timeout=5)\n"
        "        print(method, pid != os.getpid(), state, p.exitcode)\n")
    out = venv.run(str(script), SGLANG_SHIMS_DISABLE="sgl-kernel-dist-renamed")
    assert out.stdout.split("\n")[:2] == ["spawn True applied 0", "forkserver True applied 0"], \
        out.stderr
    off = venv.run(str(script), SGLANG_SHIMS_DISABLE="sgl-kernel-fused-marlin-moe")
    assert "ImportError" in off.stderr or off.returncode != 0


def test_half_installed_package_never_breaks_start(
        wheel: Path, make_venv: Callable[[], Venv], standin_kernel: Callable[..., Path]) -> None:
    venv = make_venv()
    pip_install(venv, wheel)
    add_fake_sglang(venv, standin_kernel("0.3.18"))
    os.remove(venv.site / "sglang_shims" / "_bootstrap.py")
    for pyc in (venv.site / "sglang_shims" / "__pycache__").glob("_bootstrap*"):
        pyc.unlink()
    assert venv.run("-c", "pass").stderr == ""
    out = venv.run("-c", IMPORT_AWQ)
    assert out.stderr.count("sglang-shims: start-up hook failed") == 1
    assert "_bootstrap.py" in out.stderr  # the message names what is missing
    # an end user is told what to do, not a developer command
    assert "pip install --force-reinstall sglang-shims" in out.stderr
    assert "codegen" not in out.stderr
    # the package folder removed by hand: the start-up module beside the .pth stays silent
    # until the first watched import, and then names what is missing
    shutil.rmtree(venv.site / "sglang_shims")
    assert venv.run("-c", "pass").stderr == ""
    out = venv.run("-c", "import sgl_kernel")
    assert out.returncode == 0, out.stderr
    assert out.stderr.count("sglang-shims: start-up hook failed (ModuleNotFoundError: No module"
                            " named 'sglang_shims')") == 1, out.stderr


def test_sglang_plugin_entry_point(installed: Venv) -> None:
    """sglang >= 0.5.11 calls every `sglang.srt.plugins` entry point (ep.load()()) in the
    processes it starts.  Ours installs the shims where the .pth did not run, and is a
    no-op where it did: no patch is ever applied twice in one process."""
    venv = installed
    code = (
        "import json, sys\n"
        "from importlib.metadata import entry_points\n"
        "eps = [ep for ep in entry_points(group='sglang.srt.plugins')"
        " if ep.name == 'sglang_shims']\n"
        "import sgl_kernel\n"                       # imported before the plugin runs
        "for ep in eps: ep.load()()\n"
        "for ep in eps: ep.load()()\n"              # sglang may call it more than once
        "import sglang_shims\n"
        "st = sglang_shims.status()['sgl-kernel-fused-marlin-moe']\n"
        "print(json.dumps([len(eps), st['state'], st['late'], st['changes']]))\n")
    # .pth not processed (-S; site-packages added by hand): the plugin does the work, late
    no_pth = venv.run("-S", "-c", f"import sys; sys.path.append({str(venv.site)!r})\n" + code)
    assert json.loads(no_pth.stdout) == [1, "applied", True,
                                         ["setattr sgl_kernel.fused_marlin_moe"]], no_pth.stderr
    # .pth processed: applied at import, the plugin call changes nothing
    with_pth = venv.run("-c", code)
    assert json.loads(with_pth.stdout) == [1, "applied", False,
                                           ["setattr sgl_kernel.fused_marlin_moe"]]


def test_damaged_catalog_tells_end_users_what_to_do(
        wheel: Path, make_venv: Callable[[], Venv], standin_kernel: Callable[..., Path]) -> None:
    """A start-up table that no longer matches the installed catalog is reported with the
    end user's remedy; the developer's codegen command is for source checkouts only."""
    venv = make_venv()
    pip_install(venv, wheel)
    add_fake_sglang(venv, standin_kernel("0.3.18"))
    catalog = venv.site / "sglang_shims" / "catalog" / "catalog.jsonl"
    first, *lines = catalog.read_text().split("\n")
    head = json.loads(first)  # a line of heads, then one line per patch (catalog.data)
    gone = [h[0] for h in head["heads"]].index("tf5-rope-theta-moved")
    for column in (head["heads"], head["sizes"], lines):
        del column[gone]
    catalog.write_text("\n".join([json.dumps(head), *lines]))
    out = venv.run("-c", IMPORT_AWQ)
    assert out.returncode == 0, out.stderr
    assert out.stderr.count("does not match the built-in patches") == 1, out.stderr
    assert "pip install --force-reinstall sglang-shims" in out.stderr
    assert "codegen" not in out.stderr
