"""Reading targets without importing them, and fingerprints over their source."""

from __future__ import annotations

import hashlib
import sys
import textwrap
from pathlib import Path

import pytest

from sglang_shims import _bootstrap
from sglang_shims.catalog.manifest import Fingerprint
from sglang_shims.engine import source as _source

from ..support.packages import write_package
from ..support.run import run_python

SOURCE = textwrap.dedent('''
    import os
    from typing import Any
    if True:
        from sgl_kernel import fused_marlin_moe, gptq_gemm
    try:
        from sgl_kernel import late
    except ImportError:
        late = None

    def helper(x):
        return x + 1

    class Box:
        @staticmethod
        def method(y):
            return y * 2

    def inner():
        from sgl_kernel import hidden
''')


def test_module_level_imports_see_if_and_try_but_not_functions() -> None:
    names = _source.module_level_imports(SOURCE, "sgl_kernel")
    assert names == {"fused_marlin_moe", "gptq_gemm", "late"}


def test_bound_names() -> None:
    names, stars = _source.bound_names(SOURCE + "\nfrom x import *\nVALUE: int = 3\n")
    assert {"os", "Any", "fused_marlin_moe", "late", "helper", "Box", "VALUE"} <= names
    assert "hidden" not in names and stars == ["x"]


def test_exported_names_follow_star_imports(tmp_path: Path) -> None:
    write_package(tmp_path, {
        "kpkg/__init__.py": "from kpkg.ops import *\nfrom kpkg.gone import *\nA = 1\n",
        "kpkg/ops.py": "def op():\n    pass\n_private = 2\n",
    })
    found = _source.exported_names("kpkg", [tmp_path])
    assert found == ({"A", "op"}, False)  # kpkg.gone has no source: incomplete
    (tmp_path / "kpkg/gone.py").write_text("B = 1\n")
    assert _source.exported_names("kpkg", [tmp_path]) == ({"A", "op", "B"}, True)


def test_function_hash_ignores_indentation_not_content() -> None:
    digest = _source.function_hash(SOURCE, "Box.method")
    indented = "class Box:\n" + textwrap.indent(
        "@staticmethod   \ndef method(y):\n    return y * 2\n", "        ")
    assert _source.function_hash(indented, "Box.method") == digest
    assert _source.function_hash(SOURCE.replace("y * 2", "y * 3"), "Box.method") != digest
    assert _source.function_hash(SOURCE, "Box.missing") is None


@pytest.mark.parametrize(("fp", "ok"), [
    (Fingerprint("m", anchors=("def helper(x):",)), True),
    (Fingerprint("m", anchors=("def helper(x):", "not here")), False),
    (Fingerprint("m", import_from="sgl_kernel", import_names=("fused_marlin_moe",)), True),
    (Fingerprint("m", import_from="sgl_kernel", import_names=("hidden",)), False),
    # every imported name is checked, not only the first (two patches name several)
    (Fingerprint("m", import_from="sgl_kernel", import_names=("fused_marlin_moe", "late")), True),
    (Fingerprint("m", import_from="sgl_kernel", import_names=("fused_marlin_moe", "hidden")),
     False),
    (Fingerprint("m", import_from="sgl_kernel",
                 import_names=("gptq_gemm", "late", "gone_in_a_later_release")), False),
    # the documented hash: sha256 of the definition's lines, dedented, trailing spaces
    # stripped, first 16 hex digits -- computed here, not by the code under test
    (Fingerprint("m", function="helper",
                 sha256=(hashlib.sha256(b"def helper(x):\n    return x + 1").hexdigest()[:16],)),
     True),
    (Fingerprint("m", function="helper", sha256=("0" * 16,)), False),
])
def test_check(fp: Fingerprint, ok: bool) -> None:
    good, detail = _source.check(fp, SOURCE)
    assert good is ok and detail


def test_check_unreadable_source() -> None:
    good, detail = _source.check(Fingerprint("gone", anchors=("x",)), None)
    assert not good and "cannot read" in detail


def test_locate_without_importing(tmp_path: Path) -> None:
    """Namespace portions (no __init__.py) and deep modules, nothing executed."""
    write_package(tmp_path, {
        "toppkg/__init__.py": "raise RuntimeError('must not run')\n",
        "toppkg/ns/deep/mod.py": "raise RuntimeError('must not run either')\n",
    })
    result = run_python(
        """
        import sys
        from sglang_shims.engine import source as _source
        print(_source.locate("toppkg.ns.deep.mod"))
        print(_source.locate("toppkg"))
        print(_source.locate("toppkg.ns.nothing"))
        print("toppkg" in sys.modules)
        """, paths=(tmp_path,), activate=False)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.split()
    assert lines == [str(tmp_path / "toppkg/ns/deep/mod.py"), str(tmp_path / "toppkg/__init__.py"),
                     "None", "False"]


def test_locate_through_other_meta_path_finder(tmp_path: Path) -> None:
    """A package served by a non-PathFinder finder (an editable install) is found."""
    write_package(tmp_path / "hidden", {"edpkg/__init__.py": "", "edpkg/sub/mod.py": "X = 1\n"})
    result = run_python(
        f"""
        import importlib.util, sys
        class Editable:
            def find_spec(self, name, path=None, target=None):
                if name == "edpkg":
                    return importlib.util.spec_from_file_location(
                        name, {str(tmp_path / "hidden/edpkg/__init__.py")!r},
                        submodule_search_locations=[{str(tmp_path / "hidden/edpkg")!r}])
        sys.meta_path.append(Editable())
        from sglang_shims.engine import source as _source
        print(_source.locate("edpkg.sub.mod"))
        """, activate=False)
    assert result.stdout.strip() == str(tmp_path / "hidden/edpkg/sub/mod.py"), result.stderr


def test_locate_skips_our_finders_by_their_mark(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Our own finders carry a mark and are not asked where a module lives; someone else's
    finder that happens to share a class name with one of ours is asked."""
    import importlib.util

    write_package(tmp_path, {"markpkg/__init__.py": ""})
    asked: list[str] = []

    class Ours:
        def find_spec(self, name: str, path: object = None, target: object = None) -> None:
            asked.append(name)

    setattr(Ours, _bootstrap.FINDER_MARK, True)

    class Watcher:
        def find_spec(self, name: str, path: object = None,
                      target: object = None) -> importlib.machinery.ModuleSpec | None:
            return importlib.util.spec_from_file_location(
                name, tmp_path / "markpkg/__init__.py",
                submodule_search_locations=[str(tmp_path / "markpkg")])

    monkeypatch.setattr(sys, "meta_path", [Ours(), Watcher(), *sys.meta_path])
    assert _source.locate("markpkg") == tmp_path / "markpkg/__init__.py" and asked == []
    _bootstrap._complain_later("a test")  # puts its complainer first on sys.meta_path
    assert getattr(type(sys.meta_path[0]), _bootstrap.FINDER_MARK) is True
    assert getattr(_bootstrap.Watcher, _bootstrap.FINDER_MARK) is True


def test_loaded_module_uses_its_file() -> None:
    assert _source.locate("textwrap") == Path(sys.modules["textwrap"].__file__ or "")


def test_check_all_names_the_missing_modules(tmp_path: Path) -> None:
    """No alternative installed: the fingerprint fails, saying the modules are missing (a
    partial install), not that they changed."""
    fp = Fingerprint("gone_a | gone_b", anchors=("x",))
    assert fp.modules == ("gone_a", "gone_b")
    ok, details, failure = _source.check_all((fp,), [tmp_path])
    missing = "gone_a / gone_b are not installed here (no source file found)"
    assert (ok, details, failure) == (False, [missing], missing)
    one = Fingerprint("gone_a", anchors=("x",))
    assert _source.check_all((one,), [tmp_path])[2] == (
        "gone_a is not installed here (no source file found)")


def test_check_all_says_when_a_source_exists_but_cannot_be_read(tmp_path: Path) -> None:
    (tmp_path / "binary_mod.py").write_bytes(b"\xff\xfe\x00 not utf-8")
    ok, _details, failure = _source.check_all((Fingerprint("binary_mod", anchors=("x",)),),
                                              [tmp_path])
    assert not ok and failure == "cannot read the source of binary_mod"


@pytest.mark.parametrize("fp", [
    Fingerprint("m", import_from="sgl_kernel", import_names=("x",)),
    Fingerprint("m", function="helper", sha256=("0" * 16,)),
], ids=["imports", "sha256"])
def test_check_unparsable_source(fp: Fingerprint) -> None:
    good, detail = _source.check(fp, "def broken(:\n")
    assert good is False and detail.startswith("m: cannot parse (")
