"""A draft tree over a small JSON vocabulary, and the xgrammar grammar object of sglang.

The root (index 0) is the token the target model already produced; below it a chain
that spells ``{"a":1`` and, beside its first token, a sibling ``a`` that JSON refuses.
"""
import torch
from xgrammar import GrammarCompiler, GrammarMatcher, TokenizerInfo

VOCAB = ["<eos>", "{", "}", '"', "a", ":", "1", " ", ",", "b", "[", "]"]
# index:         0  1  2  3  4  5  6  7
DRAFT = [7, 1, 3, 4, 3, 5, 6, 4]
NEXT_TOKEN = [1, 2, 3, 4, 5, 6, -1, -1]
NEXT_SIBLING = [-1, 7, -1, -1, -1, -1, -1, -1]


def grammar_object(grammar_class):
    """sglang's grammar object for the builtin JSON grammar, as its backend builds it."""
    info = TokenizerInfo(VOCAB, stop_token_ids=[0])
    ctx = GrammarCompiler(info).compile_builtin_json_grammar()
    matcher = GrammarMatcher(ctx, max_rollback_tokens=200)
    return grammar_class(matcher, len(VOCAB), ctx, None)


def walk(traverse_tree, grammar):
    """The bitmask rows the tree walk fills, as sglang's generate_token_bitmask calls it."""
    mask = grammar.allocate_vocab_mask(vocab_size=len(VOCAB), batch_size=len(DRAFT),
                                       device="cpu")
    traverse_tree(torch.tensor(NEXT_TOKEN), torch.tensor(NEXT_SIBLING), torch.tensor(DRAFT),
                  grammar, mask, vocab_size=len(VOCAB))
    return mask.tolist()
