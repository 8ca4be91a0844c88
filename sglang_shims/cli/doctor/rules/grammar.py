"""Rules on the grammar backends sglang drives for structured output."""

from __future__ import annotations

from ..facts import Facts
from ..finding import Finding, Level
from ._common import Rule, unless_patched, verdict


def _xgrammar_ffi(facts: Facts) -> Finding | None:
    sglang, xgrammar = facts.version("sglang"), facts.version("xgrammar")
    unpatched = verdict(
        Level.FAIL, f"xgrammar {xgrammar}'s tvm-ffi bindings take Python ints only, and sglang "
        f"{sglang}'s speculative decoding (EAGLE, NEXTN, MTP) hands them tensor elements when "
        "a request has a JSON schema, regex or grammar: the scheduler dies with 'TypeError: "
        "Mismatched type on argument #1 when calling: ...GrammarMatcher.accept_token'",
        "pip install 'xgrammar<0.1.34' (xgrammar 0.1.33 converts tensors itself), or upgrade "
        "sglang to >= 0.5.12")
    return unless_patched(facts, "xgrammar-ffi-int-token-ids", unpatched,
                          "hands xgrammar ints from sglang's grammar object")


RULES: tuple[Rule, ...] = (
    Rule("xgrammar-ffi-int-token-ids", "https://github.com/sgl-project/sglang/issues/24609",
         "", _xgrammar_ffi, patch="xgrammar-ffi-int-token-ids"),
)
