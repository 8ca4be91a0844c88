"""sglang 0.5.11's speculative tree walk over its xgrammar grammar object (sglang issues
24609 and 24283), and each of the two calls with a tensor argument on its own."""
import torch
from draft_tree import grammar_object, walk

from patch_state import print_result
from sglang.srt.constrained.xgrammar_backend import XGrammarGrammar
from sglang.srt.speculative.spec_utils import traverse_tree


def attempt(result, key, call):
    try:
        result[key] = call()
    except Exception as exc:
        result[key] = f"{type(exc).__name__}: {exc}"


result = {}
attempt(result, "walk", lambda: walk(traverse_tree, grammar_object(XGrammarGrammar)))
single = grammar_object(XGrammarGrammar)
attempt(result, "accept_token", lambda: single.accept_token(torch.tensor(1)))
row = single.allocate_vocab_mask(vocab_size=12, batch_size=2, device="cpu")
attempt(result, "fill_vocab_mask",
        lambda: (single.fill_vocab_mask(row, torch.tensor(1)), row.tolist())[1])
result["accepted"] = single.accepted_tokens
print_result(result, "xgrammar-ffi-int-token-ids")
