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

from ..support.run import need, run_python
from ._transformers import end_with_state, import_attempt, run_applied, run_stock

pytestmark = pytest.mark.wheels

PATCH = "outlines-json-schema-moved"

CASES = """
import json
SCHEMAS = [
    {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
     "required": ["name", "age"]},
    {"type": "array", "items": {"type": "boolean"}, "minItems": 1, "maxItems": 3},
    {"type": "object", "properties": {"kind": {"enum": ["a", "b"]}, "n": {"type": "number"}},
     "required": ["kind"]},
]
TEXTS = ['{"name": "x", "age": 3}', '{"name":"x","age":3}', '{"age": 3, "name": "x"}',
         '{"name": "x"}', '{"name": 1, "age": 3}', '[true]', '[true, false, true]', '[]',
         '[true, true, true, true]', '{"kind": "a"}', '{"kind": "c"}', '{"kind": "b", "n": 1.5}',
         '{"kind": "a", "n": -2}', 'null']

def table(build):
    import re
    out = []
    for schema in SCHEMAS:
        pattern = re.compile(build(json.dumps(schema)))
        out.append([bool(pattern.fullmatch(t)) for t in TEXTS])
    return out
"""

REFERENCE = CASES + """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("old_json_schema", sys.argv[1])
old = importlib.util.module_from_spec(spec)
spec.loader.exec_module(old)
print(json.dumps(table(lambda s: old.build_regex_from_schema(s))))
"""

PATCHED = CASES + "result = {}\n" + import_attempt(
    "sglang.srt.constrained.outlines_backend", "outlines_backend") + """
if outlines_backend is not None:
    result["table"] = table(lambda s: outlines_backend.build_regex_from_object(s))
    import outlines.fsm.json_schema as ofj, outlines_core.fsm.json_schema as ocj
    result["same_function"] = ofj.build_regex_from_schema is ocj.build_regex_from_schema
""" + end_with_state(PATCH)


@pytest.fixture(scope="module")
def paths(pypi_release: Callable[[str, str], Path],
          sglang_release: Callable[[str], Path]) -> tuple[Path, ...]:
    need("torch")
    need("outlines_core")
    return (pypi_release("outlines", "0.1.11"), sglang_release("0.4.2.post3"))


def test_stock_backend_does_not_import(paths: tuple[Path, ...]) -> None:
    data = run_stock(PATCHED, paths, PATCH, transformers=None)
    assert data["import"] == ("ImportError: cannot import name 'build_regex_from_schema' from"
                              " 'outlines.fsm.json_schema'"
                              f" ({paths[0] / 'outlines' / 'fsm' / 'json_schema.py'})")


def test_patched_regexes_match_outlines_0_1_8(paths: tuple[Path, ...],
                                               pypi_release: Callable[[str, str], Path]) -> None:
    old = pypi_release("outlines", "0.1.8") / "outlines" / "fsm" / "json_schema.py"
    reference = run_python(REFERENCE, args=(str(old),), activate=False)
    assert reference.returncode == 0, reference.stderr[-3000:]
    expected = reference.json()
    data = run_applied(PATCHED, paths, PATCH, transformers=None)
    assert isinstance(expected, list)
    assert data["import"] == "ok"
    assert data["same_function"]
    assert data["table"] == expected
    flat = [hit for row in expected for hit in row]
    assert any(flat) and not all(flat)  # the cases tell accepting from rejecting
