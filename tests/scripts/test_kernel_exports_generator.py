"""The generator of ``sgl_kernel_exports.json`` (``tools/refresh/kernel_exports.py``):
its ast reader, its version-bump finder and its serialisation, in-process and offline.

The rebuild itself reads sglang's history and the published wheels (network, minutes);
these tests pin down the parts that decide what the file says, on small made-up sources
and a tiny git repository built here.
"""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import pytest
from packaging.version import Version

from tools.refresh import _compare, _gitsource, kernel_exports
from tools.refresh._pysurface import exports, surface, top_level_names
from tools.refresh._wheels import Wheel


def _src(text: str) -> str:
    return textwrap.dedent(text).lstrip()


# -- the reader -------------------------------------------------------------------------

INIT = _src("""
    import platform
    import torch
    from pathlib import Path
    from sgl_kernel.version import __version__
    from sgl_kernel.allreduce import *
    from .gemm import fp8_scaled_mm as scaled_mm

    if platform.machine() == "arm64":
        from sgl_kernel.metal import *
    else:
        from sgl_kernel.moe import topk_softmax
        common_ops = torch.ops.sgl_kernel

    try:
        from sgl_kernel.flash_attn import flash_attn_with_kvcache
    except ImportError:
        flash_attn_with_kvcache = None

    __all__ = ["scaled_mm"]

    def create_greenctx_stream_by_value(*args):
        from sgl_kernel.spatial import inner
        return inner(*args)

    class ScalarType:
        pass
""")


def test_exports_are_the_package_own_imports_and_definitions() -> None:
    assert exports(INIT) == {
        "__version__", "*sgl_kernel.allreduce", "scaled_mm", "*sgl_kernel.metal",
        "topk_softmax", "flash_attn_with_kvcache", "create_greenctx_stream_by_value",
        "ScalarType"}


def test_exports_leave_out_helpers() -> None:
    found = exports(INIT)
    # plain imports, other distributions, assignments, names inside functions
    assert not found & {"platform", "torch", "Path", "common_ops", "__all__", "inner"}


def test_every_branch_of_a_platform_condition_counts() -> None:
    source = _src("""
        import sys
        if sys.platform == "darwin":
            from sgl_kernel.metal import rope
        elif sys.platform == "win32":
            from sgl_kernel.win import only_windows
        else:
            from sgl_kernel.gemm import gemm
    """)
    assert exports(source) == {"rope", "only_windows", "gemm"}


def test_try_except_imports_count_in_submodules() -> None:
    source = _src("""
        try:
            from . import spatial_ops
        except ImportError as _e:
            _spatial_import_error = _e
        except Exception:
            raise
        else:
            _loaded = True
        finally:
            _tried = True
    """)
    # every clause binds at import time on some machine; the handler's ``as`` name
    # is deleted when the handler ends
    assert top_level_names(source, "sgl_kernel") == {
        "spatial_ops", "_spatial_import_error", "_loaded", "_tried"}


def test_submodule_names_are_every_top_level_binding() -> None:
    source = _src("""
        from __future__ import annotations
        import torch.nn as nn
        import os.path
        from typing import Dict, Tuple
        from .utils import *
        _cache: Dict[str, int] = {}
        declared_only: int
        a, (b, *rest) = 1, (2, 3)
        counter = 0
        counter += 1
        for _i in range(2):
            pass
        with open(__file__) as handle:
            pass
        def kernel(x):
            local = x
            return local
        class Config:
            field = 1
    """)
    assert top_level_names(source, "sgl_kernel") == {
        "annotations", "nn", "os", "Dict", "Tuple", "*sgl_kernel.utils", "_cache", "a",
        "b", "rest", "counter", "_i", "handle", "kernel", "Config"}


def test_dunder_names_are_metadata_not_names() -> None:
    source = '__version__ = "0.4.6"\n__all__ = ["x"]\nx = 1\n'
    assert top_level_names(source, "sgl_kernel") == {"x"}


def test_all_in_init_does_not_add_exports() -> None:
    assert exports('from .a import x\n__all__ = ["x", "y"]\n') == {"x"}


def test_type_checking_bodies_bind_nothing() -> None:
    source = _src("""
        import typing
        from typing import TYPE_CHECKING
        if TYPE_CHECKING:
            import mlx.core as mx
        else:
            mx = None
        if typing.TYPE_CHECKING:
            from torch import Tensor
    """)
    assert top_level_names(source, "sgl_kernel") == {"typing", "TYPE_CHECKING", "mx"}
    assert "Tensor" not in top_level_names(source, "sgl_kernel")


def test_a_top_level_del_removes_and_a_conditional_one_does_not() -> None:
    source = _src("""
        _names = ["a"]
        for _name in _names:
            pass
        del _name
        del _names
        flag = 1
        if flag:
            del flag
    """)
    assert top_level_names(source, "sgl_kernel") == {"flag"}


def test_relative_imports_resolve_inside_subpackages() -> None:
    files = {
        "__init__.py": "from .quantization import *\n",
        "quantization/__init__.py": "from .gguf import *\nfrom .. import common_ops\n",
        "quantization/gguf.py": "def ggml_dequantize(): ...\n",
        "infllm_v2/_loader.py": "from ..utils import helper\n",
        "README.md": "not python",
    }
    found = surface(files)
    assert found.exports == {"*sgl_kernel.quantization"}
    assert dict(found.submodules) == {
        "quantization": {"*sgl_kernel.quantization.gguf", "common_ops"},
        "quantization.gguf": {"ggml_dequantize"},
        "infllm_v2._loader": {"helper"},
    }


def test_a_tree_without_init_or_with_bad_syntax_is_refused() -> None:
    with pytest.raises(ValueError, match=r"no sgl_kernel/__init__\.py"):
        surface({"gemm.py": "x = 1\n"})
    with pytest.raises(ValueError, match=r"sgl_kernel/gemm\.py"):
        surface({"__init__.py": "", "gemm.py": "def (:\n"})


# -- the version-bump finder ------------------------------------------------------------

def _pyproject(name: str, version: str) -> str:
    return (f'[build-system]\nrequires = ["x"]\n\n[project]\nname = "{name}"\n'
            f'version = "{version}"\n\n[project.urls]\nname = "not-this"\n')


class _Repo:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.git("init", "-q", "-b", "main")

    def git(self, *args: str) -> str:
        return subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false",
             *args], cwd=self.path, capture_output=True, text=True, check=True).stdout

    def commit(self, message: str, files: dict[str, str | None]) -> str:
        for rel, text in files.items():
            target = self.path / rel
            if text is None:
                target.unlink()
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message)
        return self.git("rev-parse", "HEAD").strip()


def test_bump_commits_are_where_each_version_first_appears(tmp_path: Path) -> None:
    repo = _Repo(tmp_path)
    old = repo.commit("early layout", {
        "sgl-kernel/pyproject.toml": _pyproject("sgl-kernel", "0.0.3"),
        "sgl-kernel/src/sgl-kernel/__init__.py": ""})
    v4 = repo.commit("move to python/ and bump 0.0.4", {
        "sgl-kernel/src/sgl-kernel/__init__.py": None,
        "sgl-kernel/python/sgl_kernel/__init__.py": "from .gemm import gemm\n",
        "sgl-kernel/python/sgl_kernel/gemm.py": "def gemm(): ...\n",
        "sgl-kernel/pyproject.toml": _pyproject("sgl-kernel", "0.0.4")})
    repo.commit("sglang's own release", {"python/pyproject.toml": _pyproject("sglang", "0.0.5")})
    broken = repo.commit("bump 0.0.5 (closing quote lost)", {
        "sgl-kernel/pyproject.toml": _pyproject("sgl-kernel", "0.0.5").replace(
            'version = "0.0.5"', 'version = "0.0.5')})
    repo.commit("fix the quote", {"sgl-kernel/pyproject.toml": _pyproject("sgl-kernel", "0.0.5")})
    repo.commit("revert to 0.0.4", {"sgl-kernel/pyproject.toml": _pyproject("sgl-kernel", "0.0.4")})
    v6 = repo.commit("rename, move and bump", {
        "sgl-kernel/pyproject.toml": None,
        "sgl-kernel/python/sgl_kernel/__init__.py": None,
        "sgl-kernel/python/sgl_kernel/gemm.py": None,
        "aot/pyproject.toml": _pyproject("sglang_kernel", "0.0.6"),
        "aot/python/sgl_kernel/__init__.py": "def moved(): ...\n"})
    repo.git("checkout", "-q", "-b", "side")
    repo.commit("fork smoke test", {"aot/pyproject.toml": _pyproject("sglang-kernel", "0.0.6+ci")})
    repo.git("checkout", "-q", "main")

    git_dir = tmp_path / ".git"
    found = _gitsource.bumps(git_dir, "main")
    assert [(b.version, b.commit, b.root) for b in found] == [
        ("0.0.3", old, "sgl-kernel/"), ("0.0.4", v4, "sgl-kernel/"),
        ("0.0.5", broken, "sgl-kernel/"), ("0.0.6", v6, "aot/")]
    assert _gitsource.package_files(git_dir, old, "sgl-kernel/python/sgl_kernel/") is None
    assert _gitsource.package_files(git_dir, v4, "sgl-kernel/python/sgl_kernel/") == {
        "__init__.py": "from .gemm import gemm\n", "gemm.py": "def gemm(): ...\n"}
    assert _gitsource.head(git_dir, "main") == repo.git("rev-parse", "main").strip()


def test_project_fields_read_only_the_project_table() -> None:
    text = ('[tool.x]\nversion = "9"\n[project]  # the wheel\nname = \'sgl-kernel\'\n'
            'version="0.3.1"\n[project.optional-dependencies]\nversion = "8"\n')
    assert _gitsource.project_fields(text) == {"name": "sgl-kernel", "version": "0.3.1"}


# -- serialisation and the offline check ------------------------------------------------

SHA = "ab" * 32


def _sample(order: list[str]) -> dict[str, object]:
    commits = {"0.3.9": "1" * 40 + ":sgl-kernel/python/sgl_kernel",
               "0.3.10": "2" * 40 + ":sgl-kernel/python/sgl_kernel"}
    wheels = {"0.4.7": Wheel("sglang_kernel-0.4.7-cp310-abi3-manylinux2014_x86_64.whl", SHA)}
    found = surface({"__init__.py": "from .gemm import *\nfrom .moe import b, a\n",
                     "moe.py": "b = a = 1\n", "gemm.py": "import torch\ndef z(): ...\n"})
    records = {"0.3.9": kernel_exports.entry(found, commit=commits["0.3.9"]),
               "0.3.10": kernel_exports.entry(found, commit=commits["0.3.10"]),
               "0.4.7": kernel_exports.entry(found, wheel=wheels["0.4.7"].file)}
    return kernel_exports.assemble(
        {v: records[v] for v in order}, commits={v: commits[v] for v in reversed(commits)},
        wheels=wheels, index={"sglang-kernel": ["0.4.7"], "sgl-kernel": ["0.3.10", "0.3.9"]},
        git={"ref": "main", "repository": "r", "head": "3" * 40}, date="2026-12-04")


def test_serialisation_is_deterministic_and_canonical() -> None:
    first = kernel_exports.render(_sample(["0.4.7", "0.3.10", "0.3.9"]))
    second = kernel_exports.render(_sample(["0.3.9", "0.4.7", "0.3.10"]))
    assert first == second
    data = json.loads(first)
    assert list(data) == ["generated_by", "source", "versions"]
    assert list(data["versions"]) == ["0.3.9", "0.3.10", "0.4.7"]
    assert list(data["generated_by"]["inputs"]["commits"]) == ["0.3.9", "0.3.10"]
    assert data["versions"]["0.3.9"] == {
        "commit": "1111111111", "exports": ["*sgl_kernel.gemm", "a", "b"],
        "submodules": {"gemm": ["torch", "z"], "moe": ["a", "b"]}}
    assert list(data["versions"]["0.4.7"]) == ["commit", "exports", "submodules", "wheel"]
    assert first.startswith('{\n "generated_by": {\n') and first.endswith("}\n")
    assert kernel_exports.problems(first) == []


@pytest.mark.parametrize(("edit", "complaint"), [
    (lambda d: d["versions"]["0.3.9"].update(commit="9999999999"), "is not input"),
    (lambda d: d["versions"]["0.3.9"]["exports"].reverse(), "not a sorted list"),
    (lambda d: d["versions"]["0.3.9"]["exports"].remove("*sgl_kernel.gemm")
     or d["versions"]["0.3.9"]["exports"].insert(0, "*sgl_kernel.nowhere"), "bad name"),
    (lambda d: d["generated_by"]["inputs"]["index"]["sgl-kernel"].append("0.3.11"),
     "on the index but not in the file"),
    (lambda d: d["generated_by"]["inputs"]["wheels"]["0.4.7"].update(sha256="x"),
     "with its sha256"),
    (lambda d: d["versions"].pop("0.3.9"), "inputs without versions: ['0.3.9']"),
])
def test_check_names_what_is_inconsistent(edit: object, complaint: str) -> None:
    data = json.loads(kernel_exports.render(_sample(["0.3.9", "0.3.10", "0.4.7"])))
    edit(data)  # type: ignore[operator]
    assert any(complaint in p for p in kernel_exports.problems(kernel_exports.render(data)))


def test_check_refuses_other_serialisations_and_old_files() -> None:
    data = _sample(["0.3.9", "0.3.10", "0.4.7"])
    assert kernel_exports.problems(json.dumps(data, indent=2) + "\n") == [
        "not in the canonical serialisation (render(json.loads(file)) differs)"]
    assert kernel_exports.problems('{"source": "", "versions": {}}')[0].startswith(
        "not a generated exports file")


def test_check_command_exit_status(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "sgl_kernel_exports.json"
    path.write_text(kernel_exports.render(_sample(["0.3.9", "0.3.10", "0.4.7"])),
                    encoding="utf-8")
    assert kernel_exports.main(["--check", "--output", str(path)]) == 0
    assert "consistent with its recorded inputs" in capsys.readouterr().out
    path.write_text(path.read_text(encoding="utf-8").replace('"a",', '"c",'),
                    encoding="utf-8")
    assert kernel_exports.main(["--check", "--output", str(path)]) == 1


def test_the_default_output_is_the_one_data_file() -> None:
    assert kernel_exports.default_output().name == "sgl_kernel_exports.json"


def test_changes_lists_each_differing_version() -> None:
    old = {"1": {"commit": "a", "exports": ["x"], "submodules": {"m": ["p"]}},
           "2": {"commit": "b", "exports": [], "submodules": {}}}
    new = {"1": {"commit": "a", "exports": ["y"], "submodules": {"m": ["p", "q"], "n": []}},
           "3": {"commit": None, "wheel": "w", "exports": [], "submodules": {}}}
    assert _compare.changes(old, new) == [
        "1: +y -x +module n +m.q", "3: new", "2: gone"]


# -- the shipped, compact copy -----------------------------------------------------------

def test_the_shipped_file_answers_as_the_full_record() -> None:
    """The package ships each name once with its runs of versions; every public answer of
    the reader is what the full record (tools/refresh/data) gives."""
    from sglang_shims.kernels.surface import exports as shipped

    full = json.loads(kernel_exports.default_output().read_text(encoding="utf-8"))["versions"]
    assert shipped.surfaces() == full and list(shipped.surfaces()) == list(full)
    assert shipped.versions() == list(full)
    for version, record in full.items():
        top = {e for e in record["exports"] if not e.startswith("*")}
        stars = [e.split(".", 1)[1] for e in record["exports"] if e.startswith("*sgl_kernel.")]
        bound = top.union(*(record["submodules"].get(s, []) for s in stars))
        assert shipped.bound(version + "+cu128") == bound | {
            s.split(".", 1)[0] for s in record["submodules"]}
        public = set(shipped.names(top)).union(
            *(shipped.names(record["submodules"].get(s, [])) for s in stars))
        assert shipped.exported(version) == public
    assert shipped.bound("0.0.0") is None
    known = [v for v in full if "+" not in v]
    for pin in [None, "0.3.9", "0.3.21.post1", "0.4.5.post9", "9.9", "x"]:
        older = [v for v in known if pin and v[0].isdigit() and pin[0].isdigit()
                 and Version(v) <= Version(pin)]
        expected = pin if pin in full else max(older or known, key=Version)
        assert shipped.choose_surface(pin) == expected, pin
    for pin in ["0.0.1", "0.0.3.post6"]:  # older than every known release: the oldest
        assert shipped.choose_surface(pin) == min(known, key=Version), pin


def test_the_compact_form_round_trips_runs() -> None:
    assert kernel_exports._runs([0, 1, 2, 5, 7, 8]) == "0-2 5 7-8"
    data = _sample(["0.3.9", "0.3.10", "0.4.7"])
    text = kernel_exports.compact(data)
    compact = json.loads(text)
    assert list(compact["versions"]) == ["0.3.9", "0.3.10", "0.4.7"]
    assert all(isinstance(runs, str) for runs in compact["exports"].values())
