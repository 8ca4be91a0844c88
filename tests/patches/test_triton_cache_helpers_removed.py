"""triton-cache-helpers-removed: sglang <= 0.4.9 imports cache helpers triton 3.4 removed.

Two set-ups.  Hermetic: a stand-in ``triton`` shaped like 3.4 (``runtime/cache.py``
without the helpers, ``knobs.cache.dir`` / ``dump_dir`` / ``override_dir`` reading the
same variables as triton's knobs) and an sglang 0.4.9 whose ``srt/utils.py`` is the
real release's own import statement, cut out of the wheel with ``ast`` -- no torch
needed.  Real: the whole sglang 0.4.9 ``srt/utils.py`` with the installed triton
(>= 3.4), including sglang's ``CustomCacheManager`` that calls the helpers.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from ..support.packages import write_package
from ..support.programs import program
from ..support.releases import module_level_import
from ..support.run import need, run_python

pytestmark = pytest.mark.wheels

PATCH = "triton-cache-helpers-removed"

# triton 3.3.1's runtime/cache.py defined these three at module level
OLD_HELPERS = '''
import os
def default_cache_dir():
    return os.path.join(os.getenv("TRITON_HOME", os.path.expanduser("~")), ".triton", "cache")
def default_dump_dir():
    return "triton-3.3-own-dump-dir"
def default_override_dir():
    return "triton-3.3-own-override-dir"
'''


def fake_triton(root: Path, version: str, knobs: bool = True) -> Path:
    shape_34 = not version.startswith("3.3")
    files = {
        "triton/__init__.py": f"__version__ = {version!r}\n",
        "triton/runtime/__init__.py": "",
        "triton/runtime/cache.py": ("from triton import knobs\n" if knobs and shape_34 else "")
        + "class FileCacheManager:\n    pass\n" + ("" if shape_34 else OLD_HELPERS),
        f"triton-{version}.dist-info/METADATA":
            f"Metadata-Version: 2.1\nName: triton\nVersion: {version}\n",
    }
    if knobs and shape_34:
        files["triton/knobs.py"] = program("patches/triton_cache_helpers_removed/tree/knobs")
    return write_package(root, files)


@pytest.fixture(scope="module")
def release049(sglang_release: Callable[[str], Path]) -> Path:
    return sglang_release("0.4.9")


def sglang_with_real_import(root: Path, release: Path, version: str = "0.4.9") -> Path:
    statement = module_level_import(release, "srt/utils.py", "triton.runtime.cache")
    assert "default_dump_dir" in statement
    return write_package(root, {
        "sglang/__init__.py": "",
        "sglang/srt/__init__.py": "",
        "sglang/srt/utils.py": statement + "\n",
        f"sglang-{version}.dist-info/METADATA":
            f"Metadata-Version: 2.1\nName: sglang\nVersion: {version}\n",
    })


CODE = program("patches/triton_cache_helpers_removed/import_line")


def run(tmp_path: Path, release: Path, triton_version: str = "3.4.0", knobs: bool = True,
        sglang_version: str = "0.4.9", **env: str) -> dict[str, object]:
    triton = fake_triton(tmp_path / "triton", triton_version, knobs)
    sglang = sglang_with_real_import(tmp_path / "sglang", release, sglang_version)
    result = run_python(CODE, paths=(triton, sglang), env={"HOME": str(tmp_path), **env})
    assert result.returncode == 0, result.stderr
    data = result.json()
    assert isinstance(data, dict)
    return data


@pytest.fixture(autouse=True)
def _no_triton_settings_of_ours(monkeypatch: pytest.MonkeyPatch) -> None:
    """The programs inherit this environment: a TRITON_CACHE_DIR (or dump, override, home)
    set where the suite runs would decide what the helpers answer, not the test's own."""
    for name in ("TRITON_CACHE_DIR", "TRITON_DUMP_DIR", "TRITON_OVERRIDE_DIR", "TRITON_HOME"):
        monkeypatch.delenv(name, raising=False)


def test_release_import_fails_stock(tmp_path: Path, release049: Path) -> None:
    data = run(tmp_path, release049, SGLANG_SHIMS="0")
    assert data["error"] == "cannot import name 'default_cache_dir' from 'triton.runtime.cache'" \
        f" ({tmp_path / 'triton' / 'triton' / 'runtime' / 'cache.py'})"


def test_helpers_answer_from_the_knobs(tmp_path: Path, release049: Path) -> None:
    data = run(tmp_path, release049, TRITON_HOME=str(tmp_path / "th"),
               TRITON_DUMP_DIR=str(tmp_path / "dumps"))
    assert data["state"] == "applied", data["reason"]
    assert data["dirs"] == [str(tmp_path / "th" / ".triton" / "cache"), str(tmp_path / "dumps"),
                            str(tmp_path / "th" / ".triton" / "override")]
    assert data["module"] == "sglang_shims.patching.triton_cache"
    assert data["changes"] == [f"setattr triton.runtime.cache.{name}" for name in
                               ("default_cache_dir", "default_dump_dir", "default_override_dir")]
    assert "triton 3.4.0 in >=3.4" in str(data["reason"])


@pytest.mark.parametrize("variant", ["empty-knobs", "no-knobs-module"])
def test_fallback_is_triton_home(tmp_path: Path, release049: Path, variant: str) -> None:
    env = {"FAKE_TRITON_EMPTY_KNOBS": "1"} if variant == "empty-knobs" else {}
    data = run(tmp_path, release049, knobs=variant != "no-knobs-module",
               TRITON_HOME=str(tmp_path / "th"), **env)
    assert data["state"] == "applied"
    base = tmp_path / "th" / ".triton"
    assert data["dirs"] == [str(base / "cache"), str(base / "dump"), str(base / "override")]
    # without TRITON_HOME: the home directory, as triton 3.3's helpers answered
    data = run(tmp_path, release049, knobs=variant != "no-knobs-module", **env)
    base = tmp_path / ".triton"
    assert data["dirs"] == [str(base / "cache"), str(base / "dump"), str(base / "override")]


def test_triton_that_still_has_them_is_untouched(tmp_path: Path, release049: Path) -> None:
    data = run(tmp_path, release049, triton_version="3.3.1")
    assert data["state"] == "not-applicable"
    assert "triton 3.3.1 not in >=3.4" in str(data["reason"])
    assert data["dirs"][1:] == ["triton-3.3-own-dump-dir", "triton-3.3-own-override-dir"]


def test_retired_when_triton_exports_them_again(tmp_path: Path, release049: Path) -> None:
    triton = fake_triton(tmp_path / "triton", "3.4.0")
    cache = triton / "triton" / "runtime" / "cache.py"
    cache.write_text(cache.read_text() + textwrap.dedent(OLD_HELPERS))
    sglang = sglang_with_real_import(tmp_path / "sglang", release049)
    data = run_python(CODE, paths=(triton, sglang)).json()
    assert isinstance(data, dict)
    assert data["state"] == "retired"
    assert data["dirs"][1] == "triton-3.3-own-dump-dir"


@pytest.mark.parametrize("env", [{"SGLANG_SHIMS_DISABLE": PATCH},
                                 {"SGLANG_SHIMS_PATCH_TRITON_CACHE_HELPERS_REMOVED": "0"}])
def test_toggles_bring_back_the_stock_error(tmp_path: Path, release049: Path,
                                            env: dict[str, str]) -> None:
    data = run(tmp_path, release049, **env)
    assert data["state"] == "disabled"
    assert str(data["error"]).startswith("cannot import name 'default_cache_dir'")


REAL = program("patches/triton_cache_helpers_removed/real_release")


def test_real_release_with_installed_triton(tmp_path: Path, release049: Path,
                                            standin_kernel: Callable[..., Path]) -> None:
    """The whole sglang 0.4.9 utils.py, the installed triton (>= 3.4) and torch."""
    need("torch")
    need("triton")
    from importlib import metadata

    from packaging.version import Version

    if Version(metadata.version("triton")) < Version("3.4"):
        pytest.skip("the installed triton still has the helpers")
    env = {"TRITON_HOME": str(tmp_path / "th"), "TRITON_DUMP_DIR": str(tmp_path / "dumps")}
    paths = (release049, standin_kernel("0.3.18"))
    stock = run_python(REAL, paths=paths, env={**env, "SGLANG_SHIMS": "0"}).json()
    assert isinstance(stock, dict)
    assert stock["error"].startswith("cannot import name 'default_cache_dir'")
    result = run_python(REAL, paths=paths, env=env, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    data = result.json()
    assert isinstance(data, dict)
    assert data["state"] == "applied"
    assert data["helpers"] == data["knobs"]
    assert data["knobs"][:2] == [str(tmp_path / "th" / ".triton" / "cache"),
                                 str(tmp_path / "dumps")]
    assert data["managers"] == [str(tmp_path / "dumps" / "k"),
                                str(tmp_path / "th" / ".triton" / "override" / "k")]
