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

For decode-sized inputs ``align_one_launch_kernel`` does all of it in one program: at one
to a few dozen tokens the three launches are mostly launch latency, and a single program
can hold every bucket's count in registers, so the counts never leave the chip and no
second or third launch waits on them.  It walks the routed tokens twice (count, then
place) with the same one-hot tiles, so it is serial in the number of tokens: that is why
the wrapper sends it small inputs only.

Ids are range-checked in their own dtype before any narrowing, so an int64 id that is
out of range cannot wrap into a valid bucket when cast to int32.
"""

from __future__ import annotations

import triton  # type: ignore[import-not-found, import-untyped, unused-ignore]
import triton.language as tl  # type: ignore[import-not-found, import-untyped, unused-ignore]


@triton.jit
def _buckets(ids_ptr, chunk, numel, n_buckets, IGNORE_INVALID: tl.constexpr,
             BLOCK_T: tl.constexpr, BLOCK_E: tl.constexpr):
    t = chunk * BLOCK_T + tl.arange(0, BLOCK_T)
    x = tl.load(ids_ptr + t, mask=t < numel, other=-2)
    # checked in the ids' own dtype: an int64 id such as 2**32 + 3 must not become 3
    ok = (t < numel) & (x >= -1) & (x < n_buckets - 1)
    if IGNORE_INVALID:
        ok = ok & (x >= 0)
    b = tl.where(ok, x, -1).to(tl.int32) + 1
    e = tl.arange(0, BLOCK_E)
    onehot = ((b[:, None] == e[None, :]) & ok[:, None]).to(tl.int32)
    return t, b, ok, onehot


@triton.jit
def _layout(counts, cumsum_ptr, post_pad_ptr, expert_ids_ptr, n_buckets, block_size,
            n_expert_ids, BLOCK_E: tl.constexpr, BLOCK_J: tl.constexpr):
    """From each bucket's token count: pad the counts to ``block_size``, write the bucket
    starts and the padded total (``cumsum_buffer``, ``num_tokens_post_pad``) and the
    expert of every block up to the total; return the starts."""
    e = tl.arange(0, BLOCK_E)
    padded = (counts + block_size - 1) // block_size * block_size
    ends = tl.cumsum(padded, axis=0)
    starts = ends - padded
    total = tl.sum(padded, axis=0)
    e_ok = e < n_buckets
    tl.store(cumsum_ptr + e, starts, mask=e_ok)
    tl.store(cumsum_ptr + n_buckets, total)
    tl.store(post_pad_ptr, total)
    n_blocks = tl.minimum(total // block_size, n_expert_ids)
    for j0 in range(0, n_blocks, BLOCK_J):
        j = j0 + tl.arange(0, BLOCK_J)
        # block j's bucket is the number of buckets that end at or before its first slot
        done = (ends[None, :] <= (j * block_size)[:, None]) & e_ok[None, :]
        owner = tl.sum(done.to(tl.int32), axis=1)
        tl.store(expert_ids_ptr + j, owner - 1, mask=j < n_blocks)
    return starts


@triton.jit(do_not_specialize=["numel", "n_sorted", "fill_per_program"])
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


@triton.jit(do_not_specialize=["n_chunks", "n_expert_ids"])
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
    _layout(carry, cumsum_ptr, post_pad_ptr, expert_ids_ptr, n_buckets, block_size,
            n_expert_ids, BLOCK_E, BLOCK_J)


@triton.jit(do_not_specialize=["numel"])
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


@triton.jit(do_not_specialize=["numel", "n_sorted", "n_expert_ids"])
def align_one_launch_kernel(ids_ptr, sorted_ptr, expert_ids_ptr, post_pad_ptr, cumsum_ptr,
                            numel, n_buckets, block_size, n_sorted, n_expert_ids,
                            IGNORE_INVALID: tl.constexpr, PAD: tl.constexpr,
                            BLOCK_T: tl.constexpr, BLOCK_E: tl.constexpr,
                            BLOCK_J: tl.constexpr, BLOCK_F: tl.constexpr):
    """The whole alignment in one program (grid ``(1,)``), for small inputs.

    Fill, count, scan, ``expert_ids`` and placement, in that order.  Every loop bound is
    an argument or a value this program computed, never a host read, so a CUDA graph
    can capture it.  Counts, bucket offsets and the running per-bucket ranks stay in
    registers as ``[BLOCK_E]`` vectors; each token picks its bucket's entry out of them
    through its one-hot row (a gather from registers), so nothing is read back from
    memory this program wrote.  The one exception to "no memory round trip" is the
    padding fill and the placement, which write the same slots: the barrier between them
    makes every thread's fill store land before any thread's token store.
    """
    if PAD:
        for f in range(0, n_sorted, BLOCK_F):
            offs = f + tl.arange(0, BLOCK_F)
            tl.store(sorted_ptr + offs, tl.full([BLOCK_F], 0, tl.int32) + numel,
                     mask=offs < n_sorted)
    counts = tl.zeros([BLOCK_E], dtype=tl.int32)
    for c in range(0, tl.cdiv(numel, BLOCK_T)):
        _, _, _, onehot = _buckets(ids_ptr, c, numel, n_buckets, IGNORE_INVALID,
                                   BLOCK_T, BLOCK_E)
        counts += tl.sum(onehot, axis=0)
    starts = _layout(counts, cumsum_ptr, post_pad_ptr, expert_ids_ptr, n_buckets,
                     block_size, n_expert_ids, BLOCK_E, BLOCK_J)
    if PAD:
        tl.debug_barrier()  # the fill above, by any thread, before any token store below
    seen = starts  # per bucket: where its next token goes
    for c in range(0, tl.cdiv(numel, BLOCK_T)):
        t, _, ok, onehot = _buckets(ids_ptr, c, numel, n_buckets, IGNORE_INVALID,
                                    BLOCK_T, BLOCK_E)
        before = tl.cumsum(onehot, axis=0) - onehot  # same-bucket tokens earlier in chunk
        dest = tl.sum(onehot * (before + seen[None, :]), axis=1)
        tl.store(sorted_ptr + dest, t, mask=ok)
        seen += tl.sum(onehot, axis=0)


# hidden and the strides come divided by ALIGN (runtime.vector_align), multiplied back by
# the constexpr so that the loads are vectorised at any width; the quotients are not
# specialised (one binary a width class).
@triton.jit(do_not_specialize=["hidden_q", "stride_xt_q", "stride_xk_q", "stride_o_q"])
def moe_sum_kernel(x_ptr, out_ptr, hidden_q, topk, stride_xt_q, stride_xk_q, stride_o_q, scale,
                   BLOCK_H: tl.constexpr, SCALE: tl.constexpr, ALIGN: tl.constexpr = 1):
    hidden = hidden_q * ALIGN
    token = tl.program_id(0).to(tl.int64)
    h = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    ok = h < hidden
    acc = tl.zeros([BLOCK_H], dtype=tl.float32)
    x_token = x_ptr + token * (stride_xt_q * ALIGN) + h
    for k in range(0, topk):
        acc += tl.load(x_token + k * (stride_xk_q * ALIGN), mask=ok, other=0.0).to(tl.float32)
    if SCALE:
        acc = acc * scale
    tl.store(out_ptr + token * (stride_o_q * ALIGN) + h, acc.to(out_ptr.dtype.element_ty),
             mask=ok)
