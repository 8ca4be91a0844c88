# mypy: disable-error-code="no-untyped-def, untyped-decorator, misc"
"""Triton kernels for FP8 (e4m3fn) activation quantisation: per group, per token, per tensor.

Imported only when an FP8 op first runs on the Triton path.  Every kernel does its
arithmetic in fp32, as sgl-kernel does, and rounds to e4m3 with :func:`round_e4m3`
before the store, so the final cast only reinterprets a value e4m3 can hold.  Why
round by hand: Triton's CPU interpreter converts fp32 to fp8 by rounding ties away
from zero and without saturating, so the kernels would differ from a GPU (and from
``torch``'s round-to-nearest-even) exactly where the tests run.  Done in fp32 the
rounding is the same everywhere and costs a few integer operations per element of a
kernel that is bound by memory.

Every division is ``tl.math.div_rn`` (IEEE, correctly rounded), never ``/``: Triton lowers
an fp32 ``/`` to ``div.full.f32``, an approximation up to two units in the last place
off, and a multiplier that far off moves values lying at an e4m3 midpoint onto the
neighbouring value (on the H200, 2026-12-05: 0.15% of a bf16 group's values against
0.1% allowed, where the interpreter, dividing exactly, was within it).  There are one or
two divisions per group, row or block, not per element: the cost does not show.

Every kernel here waits for the one before it (PDL, where the GPU has it).
"""

from __future__ import annotations

import triton  # type: ignore[import-not-found, import-untyped, unused-ignore]
import triton.language as tl  # type: ignore[import-not-found, import-untyped, unused-ignore]

from ..shared import pdl_prologue

FP8_MAX = 448.0


@triton.jit
def round_e4m3(v):
    """``v`` (fp32, already within [-448, 448]) rounded to the nearest e4m3 value, ties to
    even: adding and subtracting ``1.5 * 2**23`` units of the e4m3 spacing at ``v``'s
    exponent leaves fp32's own round-to-nearest-even to do the work; the sign bit is put
    back so that a tiny negative value becomes -0, as torch gives."""
    bits = v.to(tl.int32, bitcast=True)
    exponent = ((bits >> 23) & 0xFF) - 127
    spacing = tl.maximum(exponent, -6) - 3  # e4m3: 3 mantissa bits, subnormal below 2**-6
    magic = ((spacing + 150) << 23 | 0x400000).to(tl.float32, bitcast=True)
    r = (v + magic) - magic
    return (r.to(tl.int32, bitcast=True) | (bits & -2147483648)).to(tl.float32, bitcast=True)


@triton.jit
def _to_fp8(x, mult, fp8_min, fp8_max):
    q = tl.minimum(tl.maximum(x * mult, fp8_min), fp8_max)
    return round_e4m3(q)


@triton.jit(do_not_specialize=["n_groups"])
def per_token_group_quant_kernel(
    x_ptr, q_ptr, s_ptr,
    n_groups, groups_per_row, group_size,
    stride_s_row, stride_s_group,
    eps, fp8_min, fp8_max,
    BLOCK_G: tl.constexpr,
    BLOCK_K: tl.constexpr,
    UE8M0: tl.constexpr,
    USE_PDL: tl.constexpr = False,
):
    pdl_prologue(USE_PDL)
    g = tl.program_id(0) * BLOCK_G + tl.arange(0, BLOCK_G)
    g_ok = g < n_groups
    k = tl.arange(0, BLOCK_K)
    m2 = g_ok[:, None] & (k < group_size)[None, :]
    offs = g.to(tl.int64)[:, None] * group_size + k[None, :]
    x = tl.load(x_ptr + offs, mask=m2, other=0.0).to(tl.float32)
    amax = tl.maximum(tl.max(tl.abs(x), axis=1), eps)
    if UE8M0:
        # scale = 2**ceil(log2(amax / max)), from the fp32 bits as sgl-kernel does
        ratio = amax * tl.math.div_rn(1.0, fp8_max)
        rb = ratio.to(tl.int32, bitcast=True)
        e = ((rb >> 23) & 0xFF) - 127 + ((rb & 0x7FFFFF) != 0).to(tl.int32)
        scale = ((e + 127) << 23).to(tl.float32, bitcast=True)
        mult = ((127 - e) << 23).to(tl.float32, bitcast=True)
    else:
        scale = amax * tl.math.div_rn(1.0, fp8_max)
        mult = tl.math.div_rn(fp8_max, amax)
    q = _to_fp8(x, mult[:, None], fp8_min, fp8_max)
    tl.store(q_ptr + offs, q.to(q_ptr.dtype.element_ty), mask=m2)
    row = g // groups_per_row
    col = g % groups_per_row
    tl.store(s_ptr + row.to(tl.int64) * stride_s_row + col * stride_s_group, scale, mask=g_ok)


# The counts come divided by ALIGN (runtime.vector_align) and are multiplied back by the
# constexpr, so that the loads are vectorised at widths Triton does not specialise; the
# quotients themselves are not specialised (one binary a width class).
@triton.jit(do_not_specialize=["n_rows", "n_cols_q", "stride_x_q", "stride_q_q"])
def per_token_quant_kernel(
    x_ptr, q_ptr, s_ptr,
    n_rows, n_cols_q, stride_x_q, stride_q_q,
    fp8_max,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    ALIGN: tl.constexpr = 1,
    USE_PDL: tl.constexpr = False,
):
    pdl_prologue(USE_PDL)
    n_cols = n_cols_q * ALIGN
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    r_ok = rows < n_rows
    x_rows = x_ptr + rows.to(tl.int64)[:, None] * (stride_x_q * ALIGN)
    q_rows = q_ptr + rows.to(tl.int64)[:, None] * (stride_q_q * ALIGN)
    amax = tl.zeros([BLOCK_M], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        m2 = r_ok[:, None] & (cols < n_cols)[None, :]
        x = tl.load(x_rows + cols[None, :], mask=m2, other=0.0)
        amax = tl.maximum(amax, tl.max(tl.abs(x.to(tl.float32)), axis=1))
    scale = tl.math.div_rn(amax, fp8_max)
    inv = tl.where(scale == 0.0, 0.0, tl.math.div_rn(1.0, tl.where(scale == 0.0, 1.0, scale)))
    tl.store(s_ptr + rows.to(tl.int64), scale, mask=r_ok)
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        m2 = r_ok[:, None] & (cols < n_cols)[None, :]
        x = tl.load(x_rows + cols[None, :], mask=m2, other=0.0).to(tl.float32)
        q = _to_fp8(x, inv[:, None], -fp8_max, fp8_max)
        tl.store(q_rows + cols[None, :], q.to(q_ptr.dtype.element_ty), mask=m2)


@triton.jit(do_not_specialize=["n_q"])
def absmax_kernel(x_ptr, s_ptr, n_q, fp8_max, BLOCK: tl.constexpr, ALIGN: tl.constexpr = 1,
                  USE_PDL: tl.constexpr = False):
    pdl_prologue(USE_PDL)
    n = n_q * ALIGN
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0).to(tl.float32)
    tl.atomic_max(s_ptr, tl.math.div_rn(tl.max(tl.abs(x), axis=0), fp8_max))


@triton.jit(do_not_specialize=["n_q"])
def per_tensor_quant_kernel(x_ptr, q_ptr, s_ptr, n_q, fp8_max, BLOCK: tl.constexpr,
                            ALIGN: tl.constexpr = 1, USE_PDL: tl.constexpr = False):
    pdl_prologue(USE_PDL)
    n = n_q * ALIGN
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < n
    scale = tl.load(s_ptr)
    inv = tl.where(scale == 0.0, 0.0, tl.math.div_rn(1.0, tl.where(scale == 0.0, 1.0, scale)))
    x = tl.load(x_ptr + offs, mask=ok, other=0.0).to(tl.float32)
    q = _to_fp8(x, inv, -fp8_max, fp8_max)
    tl.store(q_ptr + offs, q.to(q_ptr.dtype.element_ty), mask=ok)
