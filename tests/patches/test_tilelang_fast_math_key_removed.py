"""tilelang-fast-math-key-removed: sglang 0.5.8.post1's DeepSeek sparse-attention kernels
on tilelang 0.1.7.post1 (sglang issue 17298).

The real sglang wheel imports ``nsa/tilelang_kernel.py`` on CPU.  tilelang's library needs
a CUDA driver to load, so tilelang is a stand-in whose ``PassConfigKey`` is the real one,
``tilelang/transform/pass_config.py`` copied from the real 0.1.7.post1 wheel (and, for the
reference, from 0.1.7, the last release with the name), with the real wheel's metadata;
its ``jit`` records each kernel's pass options.  Stock, the module fails with the report's
AttributeError.  Patched, it imports and declares every kernel with the pass options it
had on tilelang 0.1.7; the option the name stands for is one that the real 0.1.7.post1
library still registers.
"""

from __future__ import annotations

import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from ..support.patch_runs import run_applied, run_json, run_stock
from ..support.programs import program, write_tree
from ..support.run import need

pytestmark = pytest.mark.wheels

PATCH = "tilelang-fast-math-key-removed"
PATCHED = program("patches/tilelang_fast_math_key_removed/patched")


@pytest.fixture(scope="module")
def stand_in(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """A folder with the stand-in tilelang around the real ``pass_config.py`` of a release."""
    from sglang_shims.testing import wheels

    def make(version: str) -> Path:
        # the stand-in's files (the program's tree); pass_config.py from the real wheel
        root = write_tree("patches/tilelang_fast_math_key_removed",
                          tmp_path_factory.mktemp(f"tilelang-{version}"))
        with zipfile.ZipFile(wheels.fetch("tilelang", version)) as wheel:
            config = wheel.read("tilelang/transform/pass_config.py")
            (root / "tilelang" / "transform" / "pass_config.py").write_bytes(config)
            info = root / f"tilelang-{version}.dist-info"
            info.mkdir()
            (info / "METADATA").write_bytes(wheel.read(f"tilelang-{version}.dist-info/METADATA"))
        return root

    return make


@pytest.fixture(scope="module")
def sglang(sglang_release: Callable[[str], Path]) -> Path:
    need("torch")
    return sglang_release("0.5.8.post1")


def test_stock_module_fails_on_the_removed_name(stand_in: Callable[[str], Path],
                                                sglang: Path) -> None:
    data = run_stock(PATCHED, (stand_in("0.1.7.post1"), sglang), PATCH)
    assert data["tilelang"] == "0.1.7.post1"
    # the report's wording is Python 3.12's; Enum's own lookup words it so up to 3.11
    assert data["import"] in ("AttributeError: type object 'PassConfigKey' has no attribute "
                              "'TL_DISABLE_FAST_MATH'", "AttributeError: TL_DISABLE_FAST_MATH")


def test_patched_kernels_get_the_options_of_tilelang_0_1_7(stand_in: Callable[[str], Path],
                                                            sglang: Path) -> None:
    reference = run_json(PATCHED, (stand_in("0.1.7"), sglang), activate=False)
    assert reference["import"] == "ok" and reference["tilelang"] == "0.1.7"
    data = run_applied(PATCHED, (stand_in("0.1.7.post1"), sglang), PATCH)
    assert data["import"] == "ok"
    assert data["configs"] == reference["configs"]
    assert ["tl.disable_fast_math", True] in data["configs"][0]


def test_the_option_is_still_registered_by_tilelang() -> None:
    from sglang_shims.testing import wheels

    with zipfile.ZipFile(wheels.fetch("tilelang", "0.1.7.post1")) as wheel:
        library = wheel.read("tilelang/lib/libtilelang.so")
    assert b"tl.disable_fast_math\x00" in library and b"tl.enable_fast_math\x00" in library
