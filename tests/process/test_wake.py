"""Waking up cheaply: what the first watched import loads, and what it must not.

The time itself is measured in ``benchmarks/wake.py`` (speed claims live there); these
tests hold the properties that make it cheap without changing an answer: the built-in
catalog is read from JSON without running the validators or creating dataclasses, the
version reader is loaded by the finder only for a stand-in decision, and the patches'
folder of an installed package is found without importlib.resources.
"""

from __future__ import annotations

import copy
import json
import pickle
import shutil
from pathlib import Path

import pytest

from sglang_shims.catalog.validate import load_text

from ..support.packages import manifest_text, write_package
from ..support.programs import program
from ..support.run import REPO, run_python

PACKAGE = REPO / "sglang_shims"


def fake_dist(root: Path, name: str, version: str) -> None:
    folder = root / f"{name}-{version}.dist-info"
    folder.mkdir(parents=True)
    (folder / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")


def copy_package(root: Path) -> Path:
    """A copy of the package under ``root`` (to damage or rearrange), without caches."""
    target = root / "sglang_shims"
    shutil.copytree(PACKAGE, target, ignore=shutil.ignore_patterns("__pycache__"))
    return target


def test_json_catalog_wakes_without_validation_or_dataclasses() -> None:
    """Reading the built-in catalog and judging every patch loads no validator, compiles no
    validation pattern and imports neither dataclasses, tomllib nor packaging (before: the
    manifests were five frozen dataclasses, about 3 ms to create in every sglang process)."""
    out = run_python("""
        import json, sys
        from sglang_shims import _bootstrap
        from sglang_shims._toggles import Toggles
        from sglang_shims.catalog import data, load
        from sglang_shims.engine import Engine
        from sglang_shims.engine.gates import Environment

        shipped = data.read(load.builtin_root(), check_digest=False)
        engine = Engine(_bootstrap.Boot(), load.Catalog(shipped), Toggles({}), Environment())
        for m in engine.manifests.values():
            engine.judge(m, True, "test")
        unvalidated = "sglang_shims.catalog.validate" not in sys.modules and (
            "sglang_shims.catalog.fields" not in sys.modules
            or not sys.modules["sglang_shims.catalog.fields"]._compiled)
        print(json.dumps([len(shipped), unvalidated,
                          sorted(n for n in ("dataclasses", "tomllib", "packaging")
                                 if n in sys.modules)]))
    """, activate=False)
    count, unvalidated, loaded = out.json()
    assert count >= 29 and unvalidated, out.stderr
    assert loaded == [], loaded


def test_manifest_values_stay_immutable_comparable_and_copyable() -> None:
    text = manifest_text("demo-patch", "pkg.mod", requires='sglang = ">=0.5,<0.6"',
                         extra='[[provide]]\nname = "f"\nexported_by = "x 1.0"\nremedy = "pip"\n')
    first, second = load_text(text, "a", Path("/one/demo-patch")), load_text(text, "b")
    assert first == second and hash(first) == hash(second)  # where it was read from is not compared
    assert first != load_text(text.replace("test patch", "other patch"), "c")
    with pytest.raises(AttributeError):
        first.target = "elsewhere"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        first.requires[0].spec = ""  # type: ignore[misc]
    for clone in (copy.deepcopy(first), pickle.loads(pickle.dumps(first))):
        assert clone == first and clone.folder == first.folder and clone is not first
    assert "id='demo-patch'" in repr(first)
    assert json.loads(json.dumps(second.as_data()))["requires"] == [
        {"dists": ["sglang"], "spec": ">=0.5,<0.6"}]


def test_version_reader_is_loaded_only_for_a_stand_in_decision(tmp_path: Path) -> None:
    """An installed watched module is found without it; a missing one that a stand-in patch
    may replace needs it (the finder reads the stand-in's version gates)."""
    write_package(tmp_path / "pkgs", {"sgl_kernel/__init__.py": "X = 1\n"})
    code = """
        import importlib.util, sys
        found = importlib.util.find_spec("sgl_kernel") is not None
        print(found, "sglang_shims._versions" in sys.modules)
    """
    installed = run_python(code, paths=(tmp_path / "pkgs",))
    assert installed.stdout.split() == ["True", "False"], installed.stderr
    missing = run_python(code)
    assert missing.stdout.split()[1:] == ["True"], missing.stderr


def test_missing_version_reader_leaves_the_stock_answer(tmp_path: Path) -> None:
    """A damaged install without ``_versions.py``: looking for a missing sgl_kernel gives
    Python's own answers and one line on stderr, not an error out of ``find_spec``."""
    package = copy_package(tmp_path / "copy")
    (package / "_versions.py").unlink()
    fake_dist(tmp_path / "dists", "sglang", "0.5.1")  # inside the fallback's range
    out = run_python(f"""
        import sys
        sys.path.insert(0, {str(tmp_path / "copy")!r})
        import sglang_shims._bootstrap as b
        b.activate("test")
        import importlib.util
        print(importlib.util.find_spec("sgl_kernel") is None)
        try:
            import sgl_kernel
        except ModuleNotFoundError as exc:
            print(type(exc).__name__, exc.name)
    """, paths=(tmp_path / "dists",), activate=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "ModuleNotFoundError", "sgl_kernel"], out.stderr
    assert out.stderr.count("cannot read the installed versions") == 1, out.stderr


BREAK_RESOURCES = program("process/broken_resources")


def test_installed_patches_folder_is_found_without_importlib_resources(tmp_path: Path) -> None:
    """A package on disk with its own ``patches`` folder (every wheel install) is read from
    there: what importlib.resources would answer, without its cost or its failures."""
    package = copy_package(tmp_path / "copy")
    (package / "patches").mkdir()
    out = run_python(BREAK_RESOURCES, activate=False, args=(str(tmp_path / "copy"),))
    assert out.json() == [str(package / "patches"), []], out.stderr


def test_checkout_still_asks_importlib_resources_and_says_when_it_fails() -> None:
    out = run_python(BREAK_RESOURCES, activate=False)
    root, warnings = out.json()
    assert root == str(REPO / "patches"), out.stderr
    assert len(warnings) == 1 and "resources broken" in warnings[0], warnings
