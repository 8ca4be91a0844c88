"""Give xgrammar's tvm-ffi bindings the Python ints they take, for sglang 0.4.6.post5-0.5.11.

With speculative decoding and a structured-output request, sglang walks the draft tree
(``traverse_tree``) and calls the grammar object with elements of CPU tensors::

    grammar.accept_token(draft_tokens[curr])        # a 0-dim tensor
    grammar.fill_vocab_mask(allocate_token_bitmask, curr)   # curr: a 0-dim tensor too

xgrammar up to 0.1.33 converted those through ``__index__``; 0.1.34 moved its bindings to
tvm-ffi, whose ``int`` parameters accept Python ints only, so the scheduler dies with
``TypeError: Mismatched type on argument #1 when calling ...accept_token`` (sglang issues
24609 and 24283).  sglang 0.5.12 converts at the call site with ``int()``; here the two
methods of the xgrammar grammar object convert on entry instead, which covers every caller
(the reasoning wrapper delegates to them).  ``operator.index`` takes exactly what xgrammar
0.1.33 took -- ints and integer scalars -- and refuses the rest as before.
"""

from __future__ import annotations

import operator
from typing import Any

from sglang_shims.patching import Argument, PatchContext, Wrapper, argument


def _as_int(arg: Argument) -> Wrapper:
    """A wrapper that hands ``arg`` on as a Python int (an int passes unchanged)."""
    def wrapper(wrapped: Any, instance: Any, args: tuple[Any, ...],
                kwargs: dict[str, Any]) -> Any:
        value = arg(instance, args, kwargs)
        if type(value) is not int:
            args, kwargs = arg.replaced(instance, args, kwargs, operator.index(value))
        return wrapped(*args, **kwargs)

    return wrapper


def apply(ctx: PatchContext) -> None:
    grammar = ctx.module.XGrammarGrammar
    for method, name in (("accept_token", "token"), ("fill_vocab_mask", "idx")):
        ctx.wrap(grammar, method, _as_int(argument(getattr(grammar, method), name)))
    ctx.note("XGrammarGrammar.accept_token / fill_vocab_mask pass token ids and mask rows "
             "to xgrammar as Python ints")
