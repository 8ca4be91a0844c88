"""deep-gemm-standin: sglang 0.4.4-0.4.6.post4 import deep_gemm unguarded on CUDA.

The surface is read again from the real wheels (every name the releases bind or call,
and sglang's own guarded imports still falling back); the behaviour runs a module made
of a release's own import lines, cut out of its wheel with ``ast`` (no torch, no CUDA):
stock it fails as users saw, with the shims it imports and every name explains itself.
"""

from __future__ import annotations

import ast
import importlib.util
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ..support.packages import write_package
from ..support.patch_runs import run_json
from ..support.programs import program
from ..support.run import REPO

pytestmark = pytest.mark.wheels

PATCH = "deep-gemm-standin"
PROGRAM = program("patches/deep_gemm_standin")

# Each release where the names sglang takes from deep_gemm change (read from all of them):
# 0.4.4 (fp8_kernel's `import deep_gemm`), 0.4.5.post1 (jit.runtime), 0.4.5.post2 (the
# grouped masked GEMM bound in deepseek_v2), 0.4.5.post3 (quantization/deep_gemm.py),
# 0.4.6.post4 (jit.compiler, jit_kernels.runtime).
CHANGES = ("0.4.4", "0.4.5.post1", "0.4.5.post2", "0.4.5.post3", "0.4.6.post4")
OWNER = {"0.4.4": "fp8_kernel", "0.4.6.post4": "deep_gemm"}  # the module that imports it


def _surface() -> dict[str, frozenset[str]]:
    spec = importlib.util.spec_from_file_location(
        "deep_gemm_standin_patch", REPO / "patches" / PATCH / "patch.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    surface: dict[str, frozenset[str]] = module.SURFACE
    return surface


def _guarded(tree: ast.Module) -> set[int]:
    """ids of the nodes inside a ``try`` whose handler catches an ImportError."""
    catches = ("ImportError", "ModuleNotFoundError", "Exception")
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(
                h.type is None or any(isinstance(n, ast.Name) and n.id in catches
                                      for n in ast.walk(h.type)) for h in node.handlers):
            out.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return out


def uses(release: Path) -> Iterator[tuple[str, tuple[str, ...], bool]]:
    """(submodule, names, guarded) for every import from deep_gemm and every
    ``deep_gemm.<name>`` in the release's srt package."""
    for path in sorted((release / "sglang" / "srt").rglob("*.py")):
        with warnings.catch_warnings():  # the releases' own invalid escapes
            warnings.simplefilter("ignore")
            tree = ast.parse(path.read_text(encoding="utf-8-sig"))
        guarded = _guarded(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and \
                    (node.module or "").partition(".")[0] == "deep_gemm":
                yield (node.module or "").partition(".")[2], \
                    tuple(a.name for a in node.names), id(node) in guarded
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.partition(".")[0] == "deep_gemm":
                        yield alias.name.partition(".")[2], (), id(node) in guarded
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                    node.value.id == "deep_gemm":
                yield "", (node.attr,), id(node) in guarded


def test_surface_is_what_the_releases_take(sglang_release: Callable[[str], Path]) -> None:
    surface = _surface()
    wanted: dict[str, set[str]] = {}
    for version in CHANGES:
        for sub, names, guarded in uses(sglang_release(version)):
            if guarded:
                # sglang's own fallback must still be chosen: one name it asks for is missing
                assert set(names) - surface.get(sub, frozenset()), (version, sub, names)
                continue
            parts = sub.split(".") if sub else []
            for depth in range(len(parts)):  # the packages above a submodule exist too
                wanted.setdefault(".".join(parts[:depth]), set())
            wanted.setdefault(sub, set()).update(names)
    assert {k: frozenset(v) for k, v in wanted.items()} == surface


def import_lines(release: Path, owner: str) -> str:
    """The module-level deep_gemm imports of the release's ``owner`` module, kept under an
    ``if`` as in the release (four spaces in: what the fingerprint reads)."""
    path = release / "sglang" / "srt" / "layers" / "quantization" / f"{owner}.py"
    source = path.read_text(encoding="utf-8")
    lines = []
    for node in ast.walk(ast.parse(source)):
        names = [node.module or ""] if isinstance(node, ast.ImportFrom) else \
            [a.name for a in node.names] if isinstance(node, ast.Import) else []
        if any(n.partition(".")[0] == "deep_gemm" for n in names) and node.col_offset == 4:
            lines.append(ast.get_source_segment(source, node))
    assert lines, f"no deep_gemm import in {path}"
    return "import os\nif os.environ.get('CUDA_FAKED', '1'):\n" + \
        "".join(f"    {line}\n" for line in lines)


def cut_release(root: Path, release: Path, owner: str, version: str) -> Path:
    package = "sglang/srt/layers/quantization"
    return write_package(root, {
        "sglang/__init__.py": "", "sglang/srt/__init__.py": "",
        "sglang/srt/layers/__init__.py": "", f"{package}/__init__.py": "",
        f"{package}/{owner}.py": import_lines(release, owner),
        f"sglang-{version}.dist-info/METADATA":
            f"Metadata-Version: 2.1\nName: sglang\nVersion: {version}\n",
    })


def run(root: Path, owner: str, **env: str) -> dict[str, object]:
    return run_json(PROGRAM, (root,), env, args=(f"sglang.srt.layers.quantization.{owner}",))


@pytest.mark.parametrize("version", sorted(OWNER))
def test_stock_fails_and_the_standin_imports(tmp_path: Path, version: str,
                                             sglang_release: Callable[[str], Path]) -> None:
    owner = OWNER[version]
    root = cut_release(tmp_path, sglang_release(version), owner, version)
    stock = run(root, owner, SGLANG_SHIMS="0")
    assert stock["import"] == "ModuleNotFoundError: No module named 'deep_gemm'"
    data = run(root, owner, SGL_ENABLE_JIT_DEEPGEMM="1")
    assert data["state"] == "applied", data["reason"]
    assert data["import"] == "ok"
    assert str(data["call"]).startswith("MissingSymbolError: deep_gemm.get_num_sms is not"
                                        " available: deep_gemm is not installed")
    assert "Install the sgl-kernel your sglang pins" in str(data["call"])
    assert data["outside"] == "ImportError"          # sglang's guarded imports fall back
    assert data["submodule"] == "ModuleNotFoundError"
    assert data["switch"] == "0"                     # JIT DeepGEMM off, as 0.4.6.post5 does
    disabled = run(root, owner, SGLANG_SHIMS_DISABLE=PATCH)
    assert disabled["state"] == "disabled"
    assert disabled["import"] == stock["import"]


def test_not_applicable_from_the_release_that_guards_it(
        tmp_path: Path, sglang_release: Callable[[str], Path]) -> None:
    """0.4.6.post5 catches the ImportError itself: the import lines of 0.4.6.post4 under
    that version are left to fail as they do stock.  The finder checks a stand-in's
    version gates before it offers a module that is not installed, so the patch is never
    woken (pending)."""
    root = cut_release(tmp_path, sglang_release("0.4.6.post4"), "deep_gemm", "0.4.6.post5")
    data = run(root, "deep_gemm")
    assert data["state"] == "pending"
    assert data["import"] == "ModuleNotFoundError: No module named 'deep_gemm'"
