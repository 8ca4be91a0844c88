"""tf449-mllama-valid-images-removed: sglang 0.4.3.post2's configs on transformers 4.49.0.

Stock, ``sglang.srt.configs`` does not import.  Patched, it imports, and the helper that
``qwen2_5_vl_config.py`` bound answers as transformers 4.48.3's own (computed from the real
4.48.3 wheel in another interpreter) on images, nested lists, empty and mixed inputs.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from ..support.patch_runs import run_applied, run_stock
from ..support.programs import program
from ..support.run import need, run_python

pytestmark = pytest.mark.wheels

PATCH = "tf449-mllama-valid-images-removed"

REFERENCE = program("patches/tf449_mllama_valid_images_removed/reference")
PATCHED = program("patches/tf449_mllama_valid_images_removed/patched")


@pytest.fixture(scope="module")
def paths(pypi_release: Callable[[str, str], Path],
          sglang_release: Callable[[str], Path]) -> tuple[Path, ...]:
    need("torch")
    need("PIL")
    return (pypi_release("transformers", "4.49.0"), sglang_release("0.4.3.post2"))


def test_stock_configs_do_not_import(paths: tuple[Path, ...]) -> None:
    data = run_stock(PATCHED, paths, PATCH, transformers="4.49.0")
    assert data["import"].startswith(
        "ImportError: cannot import name 'is_valid_list_of_images' from"
        " 'transformers.models.mllama.image_processing_mllama'")


def test_patched_helper_answers_as_transformers_4_48(
        paths: tuple[Path, ...], pypi_release: Callable[[str, str], Path]) -> None:
    reference = run_python(REFERENCE, paths=(pypi_release("transformers", "4.48.3"),),
                           activate=False)
    assert reference.returncode == 0, reference.stderr[-3000:]
    expected = reference.json()
    data = run_applied(PATCHED, paths, PATCH, transformers="4.49.0")
    assert isinstance(expected, list)
    assert data["import"] == "ok"
    assert data["table"] == expected
    assert True in expected and False in expected and "[]" in expected
