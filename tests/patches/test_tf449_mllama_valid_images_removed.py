"""tf449-mllama-valid-images-removed: sglang 0.4.3.post2's configs on transformers 4.49.0.

Stock, ``sglang.srt.configs`` does not import.  Patched, it imports, and the helper that
``qwen2_5_vl_config.py`` bound answers as transformers 4.48.3's own (computed from the real
4.48.3 wheel in another interpreter) on images, nested lists, empty and mixed inputs.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from ..support.patch_runs import reference_json, run_applied, run_stock, wheels_fixture
from ..support.programs import patch_programs

pytestmark = pytest.mark.wheels

PATCH = "tf449-mllama-valid-images-removed"

REFERENCE, PATCHED = patch_programs(PATCH, "reference", "patched")

paths = wheels_fixture("0.4.3.post2", ("transformers", "4.49.0"), needs=("torch", "PIL"))


def test_stock_configs_do_not_import(paths: tuple[Path, ...]) -> None:
    data = run_stock(PATCHED, paths, PATCH, transformers="4.49.0")
    assert data["import"].startswith(
        "ImportError: cannot import name 'is_valid_list_of_images' from"
        " 'transformers.models.mllama.image_processing_mllama'")


def test_patched_helper_answers_as_transformers_4_48(
        paths: tuple[Path, ...], pypi_release: Callable[[str, str], Path]) -> None:
    expected = reference_json(REFERENCE, paths=(pypi_release("transformers", "4.48.3"),))
    data = run_applied(PATCHED, paths, PATCH, transformers="4.49.0")
    assert isinstance(expected, list)
    assert data["import"] == "ok"
    assert data["table"] == expected
    assert True in expected and False in expected and "[]" in expected
