# mypy: disable-error-code="no-untyped-def, untyped-decorator, misc"
"""Triton kernels for RMSNorm, Gemma RMSNorm and their fused residual-add forms.

Imported only when a norm op first runs on the Triton path (this module imports
Triton at its top).  Kernel bodies are Triton's language, not typed Python, hence
the mypy line above; the typed wrappers are in ``__init__.py``.

One kernel covers all four ops.  A program owns ``BLOCK_M`` whole rows, so the
mean of squares needs no cross-program reduction and the fused form (add, store
the new residual, normalise) is one launch that reads ``input`` and ``residual``
once and writes both once.  The normalisation uses the fp32 sum ``input +
residual`` before it is rounded to the residual's dtype, as sgl-kernel does.

Rows wider than ``BLOCK_N`` (above 32768 values) take a two-pass loop; its second
pass re-reads the residual as stored, i.e. rounded to its dtype.
"""

from __future__ import annotations

import triton  # type: ignore[import-not-found, import-untyped, unused-ignore]
import triton.language as tl  # type: ignore[import-not-found, import-untyped, unused-ignore]

from ..shared import pdl_prologue


# The counts divided by ALIGN are not specialised: their divisibility is ALIGN's (enough for
# 16-byte loads), and specialising them would split one width class into several binaries.
@triton.jit(do_not_specialize=["n_rows", "n_cols_q", "stride_x_q", "stride_res_q",
                               "stride_out_q"])
def rmsnorm_kernel(
    x_ptr, res_ptr, w_ptr, out_ptr,
    n_rows, n_cols_q,
    stride_x_q, stride_res_q, stride_out_q,
    eps,
    ALIGN: tl.constexpr,
    WEIGHT_OFFSET: tl.constexpr,
    HAS_RESIDUAL: tl.constexpr,
    SINGLE_PASS: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    USE_PDL: tl.constexpr = False,
    PDL_LATE: tl.constexpr = False,
):
    """out = x * rsqrt(mean(x^2) + eps) * (w + WEIGHT_OFFSET), x = input (+ residual).

    The width and strides come divided by ``ALIGN`` (``runtime.vector_align``): multiplied
    back here by a constexpr, their divisibility is known and the loads are vectorised."""
    pdl_prologue(USE_PDL, PDL_LATE)
    n_cols = n_cols_q * ALIGN
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_ok = rows < n_rows
    rows = rows.to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    x_rows = x_ptr + rows[:, None] * (stride_x_q * ALIGN)
    r_rows = res_ptr + rows[:, None] * (stride_res_q * ALIGN)
    o_rows = out_ptr + rows[:, None] * (stride_out_q * ALIGN)
    if SINGLE_PASS:
        col_ok = cols < n_cols
        mask = row_ok[:, None] & col_ok[None, :]
        x = tl.load(x_rows + cols[None, :], mask=mask, other=0.0).to(tl.float32)
        if HAS_RESIDUAL:
            x += tl.load(r_rows + cols[None, :], mask=mask, other=0.0).to(tl.float32)
            tl.store(r_rows + cols[None, :], x.to(res_ptr.dtype.element_ty), mask=mask)
        rrms = tl.math.rsqrt(tl.sum(x * x, axis=1) / n_cols + eps)
        w = tl.load(w_ptr + cols, mask=col_ok, other=0.0).to(tl.float32) + WEIGHT_OFFSET
        y = x * rrms[:, None] * w[None, :]
        tl.store(o_rows + cols[None, :], y.to(out_ptr.dtype.element_ty), mask=mask)
    else:
        acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
        for start in range(0, n_cols, BLOCK_N):
            c = start + cols
            mask = row_ok[:, None] & (c < n_cols)[None, :]
            x = tl.load(x_rows + c[None, :], mask=mask, other=0.0).to(tl.float32)
            if HAS_RESIDUAL:
                x += tl.load(r_rows + c[None, :], mask=mask, other=0.0).to(tl.float32)
                tl.store(r_rows + c[None, :], x.to(res_ptr.dtype.element_ty), mask=mask)
            acc += x * x
        rrms = tl.math.rsqrt(tl.sum(acc, axis=1) / n_cols + eps)
        if HAS_RESIDUAL:
            # Same program, same addresses: make the stores above visible to all threads.
            tl.debug_barrier()
        for start in range(0, n_cols, BLOCK_N):
            c = start + cols
            col_ok = c < n_cols
            mask = row_ok[:, None] & col_ok[None, :]
            if HAS_RESIDUAL:
                x = tl.load(r_rows + c[None, :], mask=mask, other=0.0).to(tl.float32)
            else:
                x = tl.load(x_rows + c[None, :], mask=mask, other=0.0).to(tl.float32)
            w = tl.load(w_ptr + c, mask=col_ok, other=0.0).to(tl.float32) + WEIGHT_OFFSET
            y = x * rrms[:, None] * w[None, :]
            tl.store(o_rows + c[None, :], y.to(out_ptr.dtype.element_ty), mask=mask)
