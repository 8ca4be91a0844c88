"""The known-bad combinations doctor looks for, one module per topic, in report order.

Each topic module holds its rules' judges and a ``RULES`` tuple; they share only
``_common`` (the :class:`Rule` type, and whether a patch is on), so adding a rule is one
judge and one entry in its topic's tuple.  The ``known-bad`` check runs :data:`RULES`.
"""

from __future__ import annotations

from . import (
    deep_gemm,
    flashinfer,
    grammar,
    kernel,
    memory,
    tilelang,
    torch,
    transformers,
    triton,
)
from ._common import Rule

__all__ = ["RULES", "Rule"]

RULES: tuple[Rule, ...] = (*kernel.RULES, *triton.RULES, *torch.RULES, *transformers.RULES,
                           *memory.RULES, *flashinfer.RULES, *deep_gemm.RULES, *tilelang.RULES,
                           *grammar.RULES)
