"""flashinfer-availability-unchecked: sglang 0.3.3-0.4.5 ask only for CUDA.

The real sglang 0.4.0 ``is_flashinfer_available`` (with the helpers it calls) and the
module-level flashinfer import of its ``layers/layernorm.py``, both cut out of the wheel
with ``ast``, on faked CUDA: stock, with no flashinfer installed, the import fails as it
does for users; patched it imports and the answer is no; with a flashinfer that imports
(a stand-in package with the names layernorm takes) the answer stays yes, and with one
that fails to import it is no.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

import pytest

from ..support.packages import write_package
from ..support.patch_runs import run_json
from ..support.programs import program
from ..support.run import need

pytestmark = pytest.mark.wheels

PATCH = "flashinfer-availability-unchecked"
PROGRAM = program("patches/flashinfer_availability_unchecked")
HELPERS = ("get_bool_env_var", "is_hip", "is_flashinfer_available")


def _segments(source: str, keep: Callable[[ast.stmt], bool]) -> list[str]:
    out = []
    for node in ast.parse(source).body:
        if keep(node):
            segment = ast.get_source_segment(source, node)
            assert segment is not None
            out.append(segment)
    return out


def cut_release(root: Path, release: Path, version: str) -> Path:
    srt = release / "sglang" / "srt"
    utils = _segments((srt / "utils.py").read_text(encoding="utf-8"), lambda n: isinstance(
        n, ast.FunctionDef) and n.name in HELPERS)
    assert len(utils) == len(HELPERS)
    norm = _segments((srt / "layers" / "layernorm.py").read_text(encoding="utf-8"),
                     lambda n: isinstance(n, ast.If) and any(
                         isinstance(b, ast.ImportFrom) and (b.module or "").startswith(
                             "flashinfer") for b in n.body))
    assert len(norm) == 1 and "from flashinfer.norm import" in norm[0]
    return write_package(root, {
        "sglang/__init__.py": "", "sglang/srt/__init__.py": "",
        "sglang/srt/utils.py": "import os\nimport torch\n\n" + "\n\n".join(utils) + "\n",
        "sglang/srt/layers/__init__.py": "",
        "sglang/srt/layers/layernorm.py":
            "from sglang.srt.utils import is_flashinfer_available\n" + norm[0] + "\n",
        f"sglang-{version}.dist-info/METADATA":
            f"Metadata-Version: 2.1\nName: sglang\nVersion: {version}\n",
    })


def flashinfer(root: Path, broken: bool) -> Path:
    names = ("fused_add_rmsnorm", "gemma_fused_add_rmsnorm", "gemma_rmsnorm", "rmsnorm")
    return write_package(root, {
        "flashinfer/__init__.py": "raise OSError('libcudart.so.12: cannot open')\n"
        if broken else "",
        "flashinfer/norm.py": "".join(f"def {n}(*a, **k): pass\n" for n in names),
    })


def run(paths: tuple[Path, ...], **env: str) -> dict[str, object]:
    return run_json(PROGRAM, paths, env, args=("sglang.srt.layers.layernorm",))


@pytest.fixture(scope="module")
def release040(sglang_release: Callable[[str], Path]) -> Path:
    return sglang_release("0.4.0")


def test_stock_fails_and_patched_takes_the_fallback(tmp_path: Path, release040: Path) -> None:
    need("torch")
    sglang = cut_release(tmp_path / "sglang", release040, "0.4.0")
    stock = run((sglang,), SGLANG_SHIMS="0")
    assert stock["import"] == "ModuleNotFoundError: No module named 'flashinfer'"
    assert stock["available"] is True
    data = run((sglang,))
    assert data["state"] == "applied", data["reason"]
    assert data["import"] == "ok"
    assert data["available"] is False
    disabled = run((sglang,), SGLANG_SHIMS_DISABLE=PATCH)
    assert disabled["state"] == "disabled"
    assert disabled["import"] == stock["import"]


@pytest.mark.parametrize("broken", [False, True])
def test_answer_follows_whether_flashinfer_imports(tmp_path: Path, release040: Path,
                                                   broken: bool) -> None:
    need("torch")
    sglang = cut_release(tmp_path / "sglang", release040, "0.4.0")
    data = run((sglang, flashinfer(tmp_path / "fi", broken)))
    assert data["state"] == "applied", data["reason"]
    assert data["import"] == "ok"
    assert data["available"] is (not broken)


def test_not_applicable_from_the_release_that_checks(tmp_path: Path, release040: Path) -> None:
    need("torch")
    sglang = cut_release(tmp_path / "sglang", release040, "0.4.5.post1")
    data = run((sglang,))
    assert data["state"] == "not-applicable"
