# mypy: disable-error-code="no-untyped-def, untyped-decorator, misc"
"""Triton kernels for the plumbing around sglang's Triton fused-MoE: block alignment of
routed tokens and the top-k reduction.

Imported only when one of those ops first runs on the Triton path.

Alignment is three launches over chunks of ``BLOCK_T`` routed tokens, each holding a
``[BLOCK_T, BLOCK_E]`` one-hot tile of (token, bucket):

1. ``align_count_kernel``: each chunk's per-bucket counts into a ``[chunks, buckets]``
   scratch (no atomics), and the chunk's share of the ``sorted_token_ids`` padding fill;
2. ``align_scan_kernel`` (one program): a running sum down the chunks turns the counts
   into each chunk's starting rank per bucket; the totals, padded up to ``block_size``,
   give the buckets' offsets, ``num_tokens_post_pad`` and ``expert_ids``;
3. ``align_place_kernel``: each token goes to its bucket's offset plus its chunk's
   starting rank plus its rank inside the chunk.

So the order within a bucket is the tokens' order, on every run (sgl-kernel's large
batch path places them by atomic increments, in no fixed order).
"""

from __future__ import annotations

import triton  # type: ignore[import-not-found, import-untyped, unused-ignore]
import triton.language as tl  # type: ignore[import-not-found, import-untyped, unused-ignore]


@triton.jit
def _buckets(ids_ptr, chunk, numel, n_buckets, IGNORE_INVALID: tl.constexpr,
             BLOCK_T: tl.constexpr, BLOCK_E: tl.constexpr):
    t = chunk * BLOCK_T + tl.arange(0, BLOCK_T)
    b = tl.load(ids_ptr + t, mask=t < numel, other=-2).to(tl.int32) + 1
    ok = (t < numel) & (b >= 0) & (b < n_buckets)
    if IGNORE_INVALID:
        ok = ok & (b >= 1)
    e = tl.arange(0, BLOCK_E)
    onehot = ((b[:, None] == e[None, :]) & ok[:, None]).to(tl.int32)
    return t, b, ok, onehot


@triton.jit
def align_count_kernel(ids_ptr, counts_ptr, sorted_ptr, numel, n_buckets, n_sorted,
                       fill_per_program, IGNORE_INVALID: tl.constexpr,
                       BLOCK_T: tl.constexpr, BLOCK_E: tl.constexpr, PAD: tl.constexpr,
                       BLOCK_F: tl.constexpr):
    chunk = tl.program_id(0)
    _, _, _, onehot = _buckets(ids_ptr, chunk, numel, n_buckets, IGNORE_INVALID,
                               BLOCK_T, BLOCK_E)
    e = tl.arange(0, BLOCK_E)
    tl.store(counts_ptr + chunk * BLOCK_E + e, tl.sum(onehot, axis=0))
    if PAD:
        start = chunk * fill_per_program
        end = tl.minimum(start + fill_per_program, n_sorted)
        for f in range(start, end, BLOCK_F):
            offs = f + tl.arange(0, BLOCK_F)
            tl.store(sorted_ptr + offs, tl.full([BLOCK_F], 0, tl.int32) + numel,
                     mask=offs < end)


@triton.jit
def align_scan_kernel(counts_ptr, cumsum_ptr, expert_ids_ptr, post_pad_ptr,
                      n_chunks, n_buckets, block_size, n_expert_ids,
                      BLOCK_C: tl.constexpr, BLOCK_E: tl.constexpr, BLOCK_J: tl.constexpr):
    e = tl.arange(0, BLOCK_E)
    carry = tl.zeros([BLOCK_E], dtype=tl.int32)
    for c0 in range(0, n_chunks, BLOCK_C):
        c = c0 + tl.arange(0, BLOCK_C)
        ptrs = counts_ptr + c[:, None] * BLOCK_E + e[None, :]
        tile = tl.load(ptrs, mask=(c < n_chunks)[:, None], other=0)
        before = tl.cumsum(tile, axis=0) - tile + carry[None, :]
        tl.store(ptrs, before, mask=(c < n_chunks)[:, None])
        carry += tl.sum(tile, axis=0)
    padded = (carry + block_size - 1) // block_size * block_size
    ends = tl.cumsum(padded, axis=0)
    total = tl.sum(padded, axis=0)
    e_ok = e < n_buckets
    tl.store(cumsum_ptr + e, ends - padded, mask=e_ok)
    tl.store(cumsum_ptr + n_buckets, total)
    tl.store(post_pad_ptr, total)
    n_blocks = total // block_size
    for j0 in range(0, n_expert_ids, BLOCK_J):
        j = j0 + tl.arange(0, BLOCK_J)
        # the bucket holding block j is the number of buckets that end at or before it
        done = (ends[None, :] <= (j * block_size)[:, None]) & e_ok[None, :]
        bucket = tl.sum(done.to(tl.int32), axis=1)
        tl.store(expert_ids_ptr + j, bucket - 1, mask=(j < n_blocks) & (j < n_expert_ids))


@triton.jit
def align_place_kernel(ids_ptr, counts_ptr, cumsum_ptr, sorted_ptr, numel, n_buckets,
                       IGNORE_INVALID: tl.constexpr, BLOCK_T: tl.constexpr, BLOCK_E: tl.constexpr):
    chunk = tl.program_id(0)
    t, b, ok, onehot = _buckets(ids_ptr, chunk, numel, n_buckets, IGNORE_INVALID,
                                BLOCK_T, BLOCK_E)
    rank = tl.sum((tl.cumsum(onehot, axis=0) - onehot) * onehot, axis=1)
    bb = tl.where(ok, b, 0)
    base = tl.load(cumsum_ptr + bb, mask=ok, other=0)
    base += tl.load(counts_ptr + chunk * BLOCK_E + bb, mask=ok, other=0)
    tl.store(sorted_ptr + base + rank, t, mask=ok)


@triton.jit
def moe_sum_kernel(x_ptr, out_ptr, hidden, topk, stride_xt, stride_xk, stride_o, scale,
                   BLOCK_H: tl.constexpr, SCALE: tl.constexpr):
    token = tl.program_id(0).to(tl.int64)
    h = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    ok = h < hidden
    acc = tl.zeros([BLOCK_H], dtype=tl.float32)
    for k in range(0, topk):
        acc += tl.load(x_ptr + token * stride_xt + k * stride_xk + h, mask=ok,
                       other=0.0).to(tl.float32)
    if SCALE:
        acc = acc * scale
    tl.store(out_ptr + token * stride_o + h, acc.to(out_ptr.dtype.element_ty), mask=ok)
