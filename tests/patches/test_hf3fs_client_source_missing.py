"""hf3fs-client-source-missing: sglang 0.4.10's wheel lacks the C++ file it compiles.

sglang 0.4.10's own ``client_hf3fs.py`` and ``storage_hf3fs.py`` (the backend's import
line of the client and its class) from the wheel, as published -- without
``hf3fs_utils.cpp`` -- on the installed torch: stock the import fails as it does for
everyone; patched it imports and building a client says why it cannot.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from ..support.packages import write_package
from ..support.patch_runs import run_json
from ..support.programs import program
from ..support.run import need

pytestmark = pytest.mark.wheels

PATCH = "hf3fs-client-source-missing"
PROGRAM = program("patches/hf3fs_client_source_missing")
FOLDER = "sglang/srt/mem_cache/storage/hf3fs"


def packages(root: Path, release: Path, version: str = "0.4.10") -> Path:
    real = release / FOLDER
    assert not (real / "hf3fs_utils.cpp").exists()  # as published
    client = (real / "client_hf3fs.py").read_text(encoding="utf-8")
    storage = (real / "storage_hf3fs.py").read_text(encoding="utf-8")
    line = next(x for x in storage.splitlines() if "import Hf3fsClient" in x)
    files = {f"{p}/__init__.py": "" for p in
             ("sglang", "sglang/srt", "sglang/srt/mem_cache", "sglang/srt/mem_cache/storage",
              FOLDER)}
    files.update({
        f"{FOLDER}/client_hf3fs.py": client,
        f"{FOLDER}/storage_hf3fs.py": line + "\n",
        f"sglang-{version}.dist-info/METADATA":
            f"Metadata-Version: 2.1\nName: sglang\nVersion: {version}\n",
    })
    return write_package(root, files)


def run(root: Path, **env: str) -> dict[str, object]:
    return run_json(PROGRAM, (root,), env, timeout=300)


@pytest.fixture(scope="module")
def release(sglang_release: Callable[[str], Path]) -> Path:
    return sglang_release("0.4.10")


def test_stock_fails_and_the_standin_imports(tmp_path: Path, release: Path) -> None:
    need("torch")
    root = packages(tmp_path / "pkgs", release)
    stock = run(root, SGLANG_SHIMS="0")
    assert str(stock["error"]).startswith("FileNotFoundError:")
    assert "hf3fs_utils.cpp" in str(stock["error"])
    data = run(root)
    assert data["state"] == "applied", data["reason"]
    assert str(data["client"]).startswith(
        "MissingSymbolError: sglang.srt.mem_cache.storage.hf3fs.client_hf3fs.Hf3fsClient is"
        " not available: the installed sglang has no hf3fs_utils.cpp")
    disabled = run(root, SGLANG_SHIMS_DISABLE=PATCH)
    assert disabled["error"] == stock["error"]


def test_release_that_ships_the_file_is_left_alone(tmp_path: Path, release: Path) -> None:
    need("torch")
    root = packages(tmp_path / "pkgs", release, version="0.4.10.post2")
    data = run(root)
    assert data["state"] == "not-applicable"
    assert str(data["error"]).startswith("FileNotFoundError:")
