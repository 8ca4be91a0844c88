"""Interpreter start through the generated ``.pth`` and ``_sglang_shims_start``, as ``site``
runs them (``site.addsitedir`` on ``sglang_shims/_activation``, which the wheel lays out at
the top of site-packages): what is loaded at start, which imports wake the bootstrap, and
from where.  The same code in a wheel installed by pip, uv and ``pip install -e`` is held by
``tests/venvs/test_install.py``; its parts, in-process, by ``tests/unit/test_start_up.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sglang_shims.catalog import load as _catalog

from ..support.packages import write_package
from ..support.programs import program
from ..support.run import REPO, run_python

ACTIVATION = REPO / "sglang_shims" / "_activation"
START_UP = program("process/start_up")
NOTHING_OF_THE_PACKAGE = ["_sglang_shims_start"]


def manifest_roots() -> list[str]:
    """The top-level packages of the built-in patches' targets, from the manifests: not from
    the generated start-up code, whose omissions this file is here to catch."""
    catalog = _catalog.load(toml=True)
    return sorted({m.target.partition(".")[0] for m in catalog.manifests
                   if m.source == "builtin"})


def start_up(names: list[str], tmp_path: Path, cwd: Path | None = None,
             **env: str) -> dict[str, Any]:
    """Run the start-up code, then import ``names``; every root is a package in tmp_path."""
    write_package(tmp_path / "pkgs", {f"{root}/__init__.py": "" for root in manifest_roots()})
    out = run_python(START_UP, paths=(tmp_path / "pkgs",), env=env, activate=False, cwd=cwd,
                     args=(str(ACTIVATION), json.dumps(names)))
    assert out.returncode == 0, out.stderr
    result = out.json()
    assert isinstance(result, dict), out.stdout
    return result


@pytest.mark.parametrize("root", manifest_roots())
def test_every_watched_root_wakes_the_bootstrap(root: str, tmp_path: Path) -> None:
    """One fresh interpreter per root that a built-in patch's target lies under: nothing of
    the package at start, one first-stage finder, and the bootstrap woken by that import."""
    result = start_up([root], tmp_path)
    assert result["start"]["loaded"] == NOTHING_OF_THE_PACKAGE
    assert result["finders"] == 1
    (after,) = result["imports"]
    assert after["error"] is None
    assert "sglang_shims._bootstrap" in after["loaded"], f"importing {root} woke nothing"
    assert (after["origin"], after["active"]) == ("pth", "pth")
    assert after["package"] == str(REPO / "sglang_shims" / "__init__.py")


def test_other_imports_wake_nothing_and_answer_as_stock(tmp_path: Path) -> None:
    """A missing unwatched module fails as without the shims: no frame of ours on the way."""
    result = start_up(["colorsys", "email.parser", "no_such_module_xyz"], tmp_path)
    for row in result["imports"]:
        assert row["loaded"] == NOTHING_OF_THE_PACKAGE, row
    missing = result["imports"][-1]
    assert missing["error"] == "ModuleNotFoundError: No module named 'no_such_module_xyz'"
    assert not [f for f in missing["frames"] if "shims" in f], missing["frames"]


def test_off_loads_nothing_and_waits_for_nothing(tmp_path: Path) -> None:
    roots = manifest_roots()
    result = start_up(roots, tmp_path, SGLANG_SHIMS="0")
    assert result["finders"] == 0
    assert [row["loaded"] for row in result["imports"]] == [NOTHING_OF_THE_PACKAGE] * len(roots)


def test_the_bootstrap_is_loaded_from_where_site_found_it(tmp_path: Path) -> None:
    """A ``sglang_shims`` folder in the current directory is not what wakes up."""
    planted = tmp_path / "cwd" / "sglang_shims"
    planted.mkdir(parents=True)
    (planted / "__init__.py").write_text("raise SystemExit('planted package ran')\n")
    (planted / "_bootstrap.py").write_text("raise SystemExit('planted bootstrap ran')\n")
    result = start_up(["sgl_kernel", "sglang_shims"], tmp_path, cwd=tmp_path / "cwd")
    woke, imported = result["imports"]
    assert woke["package"] == imported["package"] == str(REPO / "sglang_shims" / "__init__.py")


def test_extra_folders_wake_the_bootstrap_at_the_first_other_import(tmp_path: Path) -> None:
    """With SGLANG_SHIMS_PATH set, what site itself imports (sitecustomize, and pwd on
    Python 3.12 when HOME is unset: built-in modules) wakes nothing; the first other import
    does, and only the bootstrap wakes then, not the engine."""
    (tmp_path / "extra").mkdir(mode=0o700)
    result = start_up(["pwd", "sitecustomize", "colorsys"], tmp_path,
                      SGLANG_SHIMS_PATH=str(tmp_path / "extra"))
    builtin, customize, other = result["imports"]
    assert builtin["loaded"] == NOTHING_OF_THE_PACKAGE
    assert customize["error"] == "ModuleNotFoundError: No module named 'sitecustomize'"
    assert customize["loaded"] == NOTHING_OF_THE_PACKAGE
    assert "sglang_shims._bootstrap" in other["loaded"]
    assert "sglang_shims.engine" not in other["loaded"]
