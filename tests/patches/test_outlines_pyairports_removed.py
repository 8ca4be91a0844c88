"""outlines-pyairports-removed: outlines 0.0.43-0.0.46 need pyairports, gone from PyPI.

outlines 0.0.46's real ``types/airports.py`` (from its wheel) under a bare ``outlines``
package: stock the import fails as it does for users today; patched, the type is built
from airportsdata (installed here, as outlines 0.1 requires it), or, with airportsdata
hidden, the module imports and its names explain themselves when used.
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

PATCH = "outlines-pyairports-removed"
PROGRAM = program("patches/outlines_pyairports_removed")


def packages(root: Path, outlines_wheel: Path, version: str = "0.0.46") -> Path:
    airports = outlines_wheel / "outlines" / "types" / "airports.py"
    return write_package(root, {
        "outlines/__init__.py": "", "outlines/types/__init__.py": "from . import airports\n",
        "outlines/types/airports.py": airports.read_text(encoding="utf-8"),
        f"outlines-{version}.dist-info/METADATA":
            f"Metadata-Version: 2.1\nName: outlines\nVersion: {version}\n",
        "sglang-0.4.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: sglang\nVersion: 0.4.0\n",
    })


def run(paths: tuple[Path, ...], **env: str) -> dict[str, object]:
    return run_json(PROGRAM, paths, env)


@pytest.fixture(scope="module")
def outlines046(pypi_release: Callable[[str, str], Path]) -> Path:
    return pypi_release("outlines", "0.0.46")


def test_stock_fails_and_airportsdata_serves(tmp_path: Path, outlines046: Path) -> None:
    need("airportsdata")
    root = packages(tmp_path / "pkgs", outlines046)
    stock = run((root,), SGLANG_SHIMS="0")
    assert stock["error"] == "ModuleNotFoundError: No module named 'pyairports'"
    data = run((root,))
    assert data["state"] == "applied"
    assert data["jfk"] == "JFK"
    assert isinstance(data["codes"], int) and data["codes"] > 5000
    disabled = run((root,), SGLANG_SHIMS_DISABLE=PATCH)
    assert disabled["error"] == stock["error"]


def test_without_airportsdata_the_names_explain(tmp_path: Path, outlines046: Path) -> None:
    root = packages(tmp_path / "pkgs", outlines046)
    hidden = write_package(tmp_path / "hide", {
        "airportsdata/__init__.py": "raise ImportError('hidden by the test')\n"})
    data = run((hidden, root))
    assert data["state"] == "applied"
    assert "jfk" not in data
    assert str(data["use"]).startswith("outlines.types.airports.IATA is not available:"
                                       " pyairports is not installed")
    assert "Install airportsdata" in str(data["use"])


def test_outlines_01_is_left_alone(tmp_path: Path, outlines046: Path) -> None:
    root = packages(tmp_path / "pkgs", outlines046, version="0.1.0")
    data = run((root,))
    assert data["state"] == "not-applicable"
    assert data["error"] == "ModuleNotFoundError: No module named 'pyairports'"
