# mypy: disable-error-code="no-untyped-def, untyped-decorator, misc"
"""A one-line kernel that ``tools/gpus/compile_check.py`` compiles first for each
architecture: where even this fails, the installed Triton cannot target that architecture."""

from __future__ import annotations

import triton  # type: ignore[import-not-found, import-untyped, unused-ignore]
import triton.language as tl  # type: ignore[import-not-found, import-untyped, unused-ignore]


@triton.jit
def probe(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)
