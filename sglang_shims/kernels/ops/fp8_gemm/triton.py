# mypy: disable-error-code="no-untyped-def, untyped-decorator, misc"
"""Triton kernels for the FP8 (e4m3fn) matmuls: per-row/per-column scales, and 128x128 blocks.

Imported only when an FP8 matmul first runs on the Triton path.  Both accumulate the
e4m3 products in fp32 through ``tl.dot`` (a product of two e4m3 values is exact in
fp32) and apply the scales in fp32 before a single rounding to the output dtype, as
sgl-kernel's CUTLASS epilogues do; the bias is added in fp32 too, before that rounding.
Every load past an edge reads 0 (``other=0``), so any K is summed exactly over its
real values.  Up to ``launch.PDL_MAX_ROWS`` rows both wait for the kernel before them
(PDL, where the GPU has it: the quantiser that made ``A`` is usually that kernel).  The
program order groups ``GROUP_M`` row tiles per column tile, so neighbouring programs share
the weight tile in L2.
"""

from __future__ import annotations

import triton  # type: ignore[import-not-found, import-untyped, unused-ignore]
import triton.language as tl  # type: ignore[import-not-found, import-untyped, unused-ignore]

from ..shared import pdl_prologue


@triton.jit
def _tile(M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    """This program's (row tile, column tile) in grouped order."""
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * tiles_n
    first_m = (pid // per_group) * GROUP_M
    group_m = tl.minimum(tiles_m - first_m, GROUP_M)
    pid_m = first_m + (pid % per_group) % group_m
    pid_n = (pid % per_group) // group_m
    return pid_m, pid_n


@triton.jit
def _operand_tiles(a_ptr, b_ptr, M, N, stride_am, stride_ak, stride_bk, stride_bn,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                   GROUP_M: tl.constexpr):
    """This program's rows and columns of C, which of them exist, the K offsets of one
    step, and the pointers to the first step's A and B tiles (64-bit row and column
    offsets: ``M * stride_am`` passes 2**31 at large batches)."""
    pid_m, pid_n = _tile(M, N, BLOCK_M, BLOCK_N, GROUP_M)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rm.to(tl.int64)[:, None] * stride_am + rk[None, :] * stride_ak
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn.to(tl.int64)[None, :] * stride_bn
    return rm, rn, rk, rm < M, rn < N, a_ptrs, b_ptrs


@triton.jit
def _k_steps(a_ptrs, b_ptrs, rk, m_ok, n_ok, K, first, last, stride_ak, stride_bk,
             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """The fp32 sum of the A and B tiles' products over K steps ``first`` to ``last``
    (the pointers at step ``first``): the main loop of both per-channel kernels."""
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(first, last):
        k_ok = rk < K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=m_ok[:, None] & k_ok[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=k_ok[:, None] & n_ok[None, :], other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    return acc


@triton.jit(do_not_specialize=["M"])
def scaled_mm_kernel(
    a_ptr, b_ptr, sa_ptr, sb_ptr, bias_ptr, c_ptr,
    M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    stride_sa, stride_sb,
    HAS_BIAS: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    USE_PDL: tl.constexpr = False,
):
    """``C = (A @ B) * sa[:, None] * sb[None, :] (+ bias)``; a scale stride of 0 makes
    that scale one value for the whole tensor."""
    pdl_prologue(USE_PDL)
    rm, rn, rk, m_ok, n_ok, a_ptrs, b_ptrs = _operand_tiles(
        a_ptr, b_ptr, M, N, stride_am, stride_ak, stride_bk, stride_bn,
        BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M)
    acc = _k_steps(a_ptrs, b_ptrs, rk, m_ok, n_ok, K, 0, tl.cdiv(K, BLOCK_K),
                   stride_ak, stride_bk, BLOCK_M, BLOCK_N, BLOCK_K)
    _scale_store(acc, rm, rn, m_ok, n_ok, sa_ptr, sb_ptr, bias_ptr, c_ptr,
                 stride_sa, stride_sb, stride_cm, stride_cn, HAS_BIAS)


@triton.jit
def _scale_store(acc, rm, rn, m_ok, n_ok, sa_ptr, sb_ptr, bias_ptr, c_ptr,
                 stride_sa, stride_sb, stride_cm, stride_cn, HAS_BIAS: tl.constexpr):
    """The epilogue of both per-channel kernels: scale the fp32 sum by row and column,
    add the bias in fp32, round once to C's dtype and store the tile."""
    sa = tl.load(sa_ptr + rm * stride_sa, mask=m_ok, other=0.0)
    sb = tl.load(sb_ptr + rn * stride_sb, mask=n_ok, other=0.0)
    acc = acc * sa[:, None] * sb[None, :]
    if HAS_BIAS:
        acc += tl.load(bias_ptr + rn, mask=n_ok, other=0.0).to(tl.float32)[None, :]
    c_ptrs = c_ptr + rm.to(tl.int64)[:, None] * stride_cm + rn[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=m_ok[:, None] & n_ok[None, :])


@triton.jit(do_not_specialize=["M"])
def scaled_mm_split_kernel(
    a_ptr, b_ptr, sa_ptr, sb_ptr, bias_ptr, c_ptr, part_ptr, count_ptr,
    M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    stride_sa, stride_sb,
    HAS_BIAS: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr, SPLIT: tl.constexpr,
    USE_PDL: tl.constexpr = False,
):
    """``scaled_mm_kernel`` with K cut in ``SPLIT`` runs of steps (grid: tiles x SPLIT),
    for the few-row matmuls whose column tiles alone leave SMs idle or unevenly loaded.

    Each program writes its fp32 partial sum to ``part_ptr`` (``[tiles, SPLIT, BLOCK_M,
    BLOCK_N]``) and counts itself in on its tile's ``count_ptr`` entry; the tile's last
    program to arrive adds the ``SPLIT`` partials in index order (the same sum whichever
    program is last), sets the count back to 0 for the next launch, and stores the
    scaled tile.  Its loads of the partials go to L2 (``.cg``): other SMs wrote them."""
    pdl_prologue(USE_PDL)
    rm, rn, rk, m_ok, n_ok, a_ptrs, b_ptrs = _operand_tiles(
        a_ptr, b_ptr, M, N, stride_am, stride_ak, stride_bk, stride_bn,
        BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M)
    steps = tl.cdiv(K, BLOCK_K)
    per = tl.cdiv(steps, SPLIT)
    part = tl.program_id(1)
    first = part * per
    a_ptrs += first * BLOCK_K * stride_ak
    b_ptrs += first * BLOCK_K * stride_bk
    acc = _k_steps(a_ptrs, b_ptrs, rk, m_ok, n_ok, K, first, tl.minimum(first + per, steps),
                   stride_ak, stride_bk, BLOCK_M, BLOCK_N, BLOCK_K)
    tile = tl.program_id(0)
    cell = tl.arange(0, BLOCK_M)[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]
    parts = part_ptr + tile.to(tl.int64) * (SPLIT * BLOCK_M * BLOCK_N) + cell
    tl.store(parts + part * (BLOCK_M * BLOCK_N), acc)
    tl.debug_barrier()  # every thread's partial is written before the count says so
    if tl.atomic_add(count_ptr + tile, 1, sem="acq_rel") == SPLIT - 1:
        total = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for s in tl.static_range(SPLIT):
            total += tl.load(parts + s * (BLOCK_M * BLOCK_N), cache_modifier=".cg")
        tl.store(count_ptr + tile, 0)
        _scale_store(total, rm, rn, m_ok, n_ok, sa_ptr, sb_ptr, bias_ptr, c_ptr,
                     stride_sa, stride_sb, stride_cm, stride_cn, HAS_BIAS)


@triton.jit(do_not_specialize=["M"])
def block_scaled_mm_kernel(
    a_ptr, b_ptr, sa_ptr, sb_ptr, c_ptr,
    M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    stride_sam, stride_sak, stride_sbk, stride_sbn,
    SCALE_BLOCK: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr,
    USE_PDL: tl.constexpr = False,
):
    """``C = sum over k-blocks of (A_kb @ B_kb) * sa[:, kb] * sb[kb, n // SCALE_BLOCK]``:
    one k step per scale block, its partial product scaled in fp32 before it is added."""
    pdl_prologue(USE_PDL)
    rm, rn, rk, m_ok, n_ok, a_ptrs, b_ptrs = _operand_tiles(
        a_ptr, b_ptr, M, N, stride_am, stride_ak, stride_bk, stride_bn,
        BLOCK_M, BLOCK_N, SCALE_BLOCK, GROUP_M)
    sa_ptrs = sa_ptr + rm.to(tl.int64) * stride_sam
    sb_ptrs = sb_ptr + (rn // SCALE_BLOCK) * stride_sbn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for kb in range(0, tl.cdiv(K, SCALE_BLOCK)):
        k_ok = rk < K - kb * SCALE_BLOCK
        a = tl.load(a_ptrs, mask=m_ok[:, None] & k_ok[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=k_ok[:, None] & n_ok[None, :], other=0.0)
        sa = tl.load(sa_ptrs + kb * stride_sak, mask=m_ok, other=0.0)
        sb = tl.load(sb_ptrs + kb * stride_sbk, mask=n_ok, other=0.0)
        acc += tl.dot(a, b) * sa[:, None] * sb[None, :]
        a_ptrs += SCALE_BLOCK * stride_ak
        b_ptrs += SCALE_BLOCK * stride_bk
    c_ptrs = c_ptr + rm.to(tl.int64)[:, None] * stride_cm + rn[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=m_ok[:, None] & n_ok[None, :])
