"""outlines-json-schema-moved: sglang 0.4.2.post3's outlines backend on outlines 0.1.11.

Stock, ``sglang.srt.constrained.outlines_backend`` does not import (outlines 0.1.9 moved
``build_regex_from_schema`` to outlines_core).  Patched, it imports, and the regexes its
``build_regex_from_object`` builds accept and reject the same JSON texts as the regexes of
outlines 0.1.8 -- the last release where sglang's import worked -- whose
``outlines/fsm/json_schema.py`` (pure Python) is loaded from its real wheel as reference.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from ..support.patch_runs import reference_json, run_applied, run_stock, wheels_fixture
from ..support.programs import patch_programs

pytestmark = pytest.mark.wheels

PATCH = "outlines-json-schema-moved"

REFERENCE, PATCHED = patch_programs(PATCH, "reference", "patched")

paths = wheels_fixture("0.4.2.post3", ("outlines", "0.1.11"), needs=("torch", "outlines_core"))


def test_stock_backend_does_not_import(paths: tuple[Path, ...]) -> None:
    data = run_stock(PATCHED, paths, PATCH)
    assert data["import"] == ("ImportError: cannot import name 'build_regex_from_schema' from"
                              " 'outlines.fsm.json_schema'"
                              f" ({paths[0] / 'outlines' / 'fsm' / 'json_schema.py'})")


def test_patched_regexes_match_outlines_0_1_8(paths: tuple[Path, ...],
                                               pypi_release: Callable[[str, str], Path]) -> None:
    old = pypi_release("outlines", "0.1.8") / "outlines" / "fsm" / "json_schema.py"
    expected = reference_json(REFERENCE, args=(str(old),))
    data = run_applied(PATCHED, paths, PATCH)
    assert isinstance(expected, list)
    assert data["import"] == "ok"
    assert data["same_function"]
    assert data["table"] == expected
    flat = [hit for row in expected for hit in row]
    assert any(flat) and not all(flat)  # the cases tell accepting from rejecting
