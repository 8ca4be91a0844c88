"""torch-amx-probe-removed: sglang 0.5.1's import-time AMX probe on torch >= 2.11."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from ..support.programs import program
from ..support.run import need, run_python

pytestmark = pytest.mark.wheels

CODE = program("patches/torch_amx_probe_removed")


@pytest.fixture(scope="module")
def paths(sglang_release: Callable[[str], Path],
          standin_kernel: Callable[..., Path]) -> tuple[Path, ...]:
    need("torch")
    return (sglang_release("0.5.1"), standin_kernel("0.3.18"))


def test_probe_restored_with_the_same_answer(paths: tuple[Path, ...]) -> None:
    data = run_python(CODE, paths=paths).json()
    assert isinstance(data, dict)
    assert data["before"] is False, "this torch still has the probe: the test proves nothing"
    assert data["ok"] and data["state"] == "applied"
    # sglang's answer is the public probe's answer, gated by its own backend check
    assert data["amx"] == (data["public"] and data["backend"])


def test_stock_import_fails(paths: tuple[Path, ...]) -> None:
    data = run_python(CODE, paths=paths, env={"SGLANG_SHIMS": "0"}).json()
    assert isinstance(data, dict)
    assert data == {"ok": False, "before": False,
                    "error": "module 'torch._C._cpu' has no attribute '_is_amx_tile_supported'"}
