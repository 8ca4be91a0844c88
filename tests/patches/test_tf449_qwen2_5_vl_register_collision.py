"""tf449-qwen2-5-vl-register-collision: sglang's Qwen2.5-VL registrations on transformers 4.49.

sglang 0.4.4 (only the collision) and 0.4.3.post2 (which also needs
tf449-mllama-valid-images-removed) on the real transformers 4.49.0 wheel: stock,
``sglang.srt.configs`` fails to import; patched, it imports, sglang's config maps to the
same sglang processors as on transformers 4.48.3 (computed from that real wheel in another
interpreter, where the registrations always worked), transformers' own Qwen2_5_VLConfig
keeps transformers' processors, and a colliding registration from anywhere else still
raises.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from ..support.programs import program
from ..support.run import need, run_python

pytestmark = pytest.mark.wheels

PATCH = "tf449-qwen2-5-vl-register-collision"

PROGRAM = program("patches/tf449_qwen2_5_vl_register_collision")


@pytest.fixture(scope="module")
def transformers449(pypi_release: Callable[[str, str], Path]) -> Path:
    need("torch")
    need("PIL")
    return pypi_release("transformers", "4.49.0")


@pytest.mark.parametrize("sglang", ["0.4.4", "0.4.3.post2"])
def test_stock_configs_do_not_import(sglang: str, transformers449: Path,
                                     sglang_release: Callable[[str], Path]) -> None:
    result = run_python(PROGRAM, paths=(transformers449, sglang_release(sglang)),
                        env={"SGLANG_SHIMS_DISABLE": PATCH}, args=(PATCH,), timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    data = result.json()
    assert isinstance(data, dict)
    assert data["import"] == ("ValueError: '<class 'sglang.srt.configs.qwen2_5_vl_config."
                              "Qwen2_5_VLConfig'>' is already used by a Transformers model.")
    assert data["state"] == "disabled"


@pytest.mark.parametrize("sglang", ["0.4.4", "0.4.3.post2"])
def test_patched_registrations_as_on_transformers_4_48(
        sglang: str, transformers449: Path, sglang_release: Callable[[str], Path],
        pypi_release: Callable[[str, str], Path]) -> None:
    release = sglang_release(sglang)
    reference = run_python(PROGRAM, paths=(pypi_release("transformers", "4.48.3"), release),
                           args=(PATCH,), timeout=300)
    assert reference.returncode == 0, reference.stderr[-3000:]
    expected = reference.json()
    assert isinstance(expected, dict)
    assert expected["transformers"] == "4.48.3" and expected["import"] == "ok"
    assert expected["state"] == "not-applicable"
    result = run_python(PROGRAM, paths=(transformers449, release), args=(PATCH,), timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    data = result.json()
    assert isinstance(data, dict)
    assert data["import"] == "ok"
    assert data["state"] == "applied"
    assert data["ours"] == expected["ours"]
    assert data["ours"]["processor"] == "sglang.srt.configs.qwen2_5_vl_config.Qwen2_5_VLProcessor"
    assert data["native_unchanged"]
    assert data["native"]["processor"].startswith("transformers.models.qwen2_5_vl.")
    assert data["others"].endswith("is already used by a Transformers model.")
