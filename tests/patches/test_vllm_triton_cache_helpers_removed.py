"""vllm-triton-cache-helpers-removed: vllm 0.5.2-0.8.0 imports the triton cache helpers
triton 3.4 removed, and sglang 0.4.0 imports vllm before its own utils.

vllm's real ``custom_cache_manager.py`` (only that file of the ~200 MB wheel, read by range
requests) with ``vllm.logger`` stubbed, and sglang 0.4.0's real ``srt/utils.py`` import
line cut out of its wheel, on the installed triton (>= 3.4): stock vllm's import fails;
patched, vllm's own manager gets triton's folders, and sglang's utils, imported after,
finds the helpers already there.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from sglang_shims.testing import wheel_members, wheels

from ..support.packages import write_package
from ..support.patch_runs import run_json
from ..support.programs import program
from ..support.releases import module_level_import
from ..support.run import need

pytestmark = pytest.mark.wheels

PATCH = "vllm-triton-cache-helpers-removed"
PROGRAM = program("patches/vllm_triton_cache_helpers_removed/vllm_first")
VLLM = "0.6.4.post1"  # what sglang 0.4.0's lock resolves (tools/matrix/locks)
MODULE = "vllm/triton_utils/custom_cache_manager.py"


@pytest.fixture(scope="module")
def manager_source() -> str:
    try:
        folder = wheel_members.members("vllm", VLLM, (MODULE,))
    except wheels.NotServed as exc:
        pytest.skip(f"the package index could not serve vllm=={VLLM}: {exc}")
    return (folder / MODULE).read_text(encoding="utf-8")


def packages(root: Path, manager: str, release: Path, vllm: str = VLLM) -> Path:
    return write_package(root, {
        "vllm/__init__.py": "", "vllm/triton_utils/__init__.py": "",
        "vllm/logger.py": "import logging\ninit_logger = logging.getLogger\n",
        MODULE: manager,
        f"vllm-{vllm}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: vllm\nVersion: {vllm}\n",
        "sglang/__init__.py": "", "sglang/srt/__init__.py": "",
        "sglang/srt/utils.py": module_level_import(release, "srt/utils.py",
                                                     "triton.runtime.cache") + "\n",
        "sglang-0.4.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: sglang\nVersion: 0.4.0\n",
    })


def run(root: Path, tmp_path: Path, **env: str) -> dict[str, object]:
    need("triton")
    return run_json(PROGRAM, (root,), {
        "TRITON_HOME": str(tmp_path / "th"), "TRITON_DUMP_DIR": str(tmp_path / "dumps"), **env})


def test_vllm_first(tmp_path: Path, manager_source: str,
                    sglang_release: Callable[[str], Path]) -> None:
    root = packages(tmp_path / "pkgs", manager_source, sglang_release("0.4.0"))
    stock = run(root, tmp_path, SGLANG_SHIMS="0")
    assert str(stock["error"]).startswith("cannot import name 'default_cache_dir' from"
                                          " 'triton.runtime.cache'")
    data = run(root, tmp_path)
    vllm, utils = data["vllm"], data["utils"]
    assert isinstance(vllm, dict) and isinstance(utils, dict)
    assert vllm["state"] == "applied"
    assert vllm["changes"] == [f"setattr triton.runtime.cache.{name}" for name in
                               ("default_cache_dir", "default_dump_dir", "default_override_dir")]
    assert data["managers"] == [str(tmp_path / "dumps" / "k"),
                                str(tmp_path / "th" / ".triton" / "override" / "k")]
    assert data["sglang"] == data["knobs"]
    # sglang's own patch acts second and finds them put back: no second change
    assert utils["state"] == "applied" and utils["changes"] == []
    assert any("already put back" in note for note in utils["notes"])
    disabled = run(root, tmp_path, SGLANG_SHIMS_DISABLE=PATCH)
    assert disabled["error"] == stock["error"]


def test_vllm_after_the_range_is_left_alone(tmp_path: Path, manager_source: str,
                                            sglang_release: Callable[[str], Path]) -> None:
    """vllm 0.8.1 dropped the module; a vllm that claims that version is not patched."""
    root = packages(tmp_path / "pkgs", manager_source, sglang_release("0.4.0"), vllm="0.8.1")
    data = run(root, tmp_path)
    assert str(data["error"]).startswith("cannot import name 'default_cache_dir'")
