"""xgrammar-ffi-int-token-ids: sglang 0.5.11's speculative-decoding tree walk with
xgrammar's tvm-ffi bindings (sglang issues 24609 and 24283; xgrammar issue 617).

The real sglang 0.5.11 wheel, with its transformers, and the real xgrammar 0.2.1 and
apache-tvm-ffi wheels, on CPU: sglang's own ``traverse_tree`` walks a draft tree over its
own xgrammar grammar object, as ``generate_token_bitmask`` does for an EAGLE batch with a
JSON-schema request.  Stock, the first draft token stops the walk with the report's
TypeError, and a tensor mask row fails the same way (the second report).  Patched, the
walk fills the bitmask rows that sglang 0.5.12's ``traverse_tree`` -- which converts with
``int()``, read from its wheel -- fills over the same grammar.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from ..support.patch_runs import reference_json, run_applied, run_stock, wheels_fixture
from ..support.programs import patch_programs

pytestmark = pytest.mark.wheels

PATCH = "xgrammar-ffi-int-token-ids"
REFERENCE, PATCHED = patch_programs(PATCH, "reference", "patched")
MISMATCH = ("TypeError: Mismatched type on argument #{n} when calling: "
            "`xgrammar.tvm_ffi_binding.GrammarMatcher.{call}`. Expected `int` but got "
            "`ffi.Tensor`")

paths = wheels_fixture("0.5.11", ("xgrammar", "0.2.1"), ("apache-tvm-ffi", "0.1.15.post2"),
                       ("transformers", "5.6.0"), ("huggingface_hub", "1.5.0"),
                       ("tokenizers", "0.22.2"))


def test_stock_walk_fails_on_the_first_draft_token(paths: tuple[Path, ...]) -> None:
    data = run_stock(PATCHED, paths, PATCH)
    accept = MISMATCH.format(
        n=1, call="accept_token(0: xgrammar.tvm_ffi_binding.GrammarMatcher, 1: int, 2: bool)"
                  " -> bool")
    assert data["walk"] == accept
    assert data["accept_token"] == accept
    assert data["fill_vocab_mask"] == MISMATCH.format(
        n=2, call="fill_next_token_bitmask(0: xgrammar.tvm_ffi_binding.GrammarMatcher, "
                  "1: AnyView, 2: int, 3: bool) -> bool")


def test_patched_walk_fills_the_rows_of_sglang_0_5_12(
        paths: tuple[Path, ...], sglang_release: Callable[[str], Path]) -> None:
    fixed = sglang_release("0.5.12") / "sglang" / "srt" / "speculative" / "spec_utils.py"
    expected = reference_json(REFERENCE, paths=paths, args=(str(fixed),))
    assert isinstance(expected, dict)
    data = run_applied(PATCHED, paths, PATCH)
    assert data["walk"] == expected["walk"]
    rows = expected["walk"]
    assert rows[1] != rows[2] and any(rows[6])  # the rows differ along the chain
    assert data["accept_token"] is None and data["accepted"] == [1]
    assert isinstance(data["fill_vocab_mask"], list)
