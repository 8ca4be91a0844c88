# mypy: disable-error-code="no-untyped-def, untyped-decorator, misc"
"""Triton kernels for the plumbing around sglang's Triton fused-MoE: block alignment of
routed tokens and the top-k reduction.

Imported only when one of those ops first runs on the Triton path.

Large inputs are aligned by sorting.  A chunk of ``SUB`` routed tokens becomes ``SUB`` keys
``bucket * SUB + position`` (ids left out go to a junk bucket past the real ones, so
``BLOCK_E`` is a power of two above the bucket count), sorted in registers with
``tl.sort``; in key order a token's rank inside its bucket is its place in a run of equal
buckets, which one segmented scan (``_same_run``) gives.  Its slot is then its bucket's
start, read from memory by bucket (a gather through L1), plus that rank.  The work per
token is ``O(log^2 SUB)`` whatever the bucket count; the chunks before these built a
``[tokens, buckets]`` one-hot tile per step, ``O(buckets)`` per token, which at 257
buckets held 16 tokens a step (16384 tokens x top-8 of 256 experts: 481 us on an H100,
now 19 us, sgl-kernel 44 us).  Three launches:

1. ``align_count_kernel``: each chunk's per-bucket counts (``tl.histogram``) into a
   ``[chunks, BLOCK_E]`` scratch (no atomics), and the chunk's share of the
   ``sorted_token_ids`` padding fill;
2. ``align_scan_kernel`` (one program): a running sum down the chunks turns the counts
   into each chunk's starting rank per bucket; the totals, padded up to ``block_size``,
   give the buckets' offsets (``cumsum_buffer``) and ``num_tokens_post_pad``;
3. ``align_place_kernel``: each chunk sorts and places its tokens, and writes its share of
   ``expert_ids`` (the block-to-bucket lookup is spread over the chunks: in one program
   it took longer than the rest of the op at 16384 tokens).

So the order within a bucket is the tokens' order, on every run (sgl-kernel's large
batch path places them by atomic increments, in no fixed order).

Up to 16 chunks (``launch.fused``) steps 2 and 3 are one launch,
``align_scan_place_kernel``: each placing program scans the counts itself.  Decode-sized
inputs take one program: up to 32 routed tokens ``align_one_launch_kernel`` sorts them all,
the counts taken from the sorted runs; beyond, ``align_atomic_one_launch_kernel`` ranks
them by atomic increments (no fixed order inside a bucket).  Both pass the counts and
starts through ``cumsum_buffer`` between barriers (``_place_counted``).  Every kernel here
waits for the one before it (PDL, where the GPU has it).

Ids are range-checked in their own dtype before any narrowing, so an int64 id that is
out of range cannot wrap into a valid bucket when cast to int32.
"""

from __future__ import annotations

import triton  # type: ignore[import-not-found, import-untyped, unused-ignore]
import triton.language as tl  # type: ignore[import-not-found, import-untyped, unused-ignore]

from ..shared import pdl_prologue


@triton.jit
def _buckets(ids_ptr, first, numel, n_buckets, IGNORE_INVALID: tl.constexpr,
             SUB: tl.constexpr, BLOCK_E: tl.constexpr):
    """The buckets of routed tokens ``first .. first + SUB``: the junk bucket
    ``BLOCK_E - 1`` for ids left out and for slots past ``numel``."""
    t = first + tl.arange(0, SUB)
    x = tl.load(ids_ptr + t, mask=t < numel, other=-2)
    # checked in the ids' own dtype: an int64 id such as 2**32 + 3 must not become 3
    ok = (t < numel) & (x >= -1) & (x < n_buckets - 1)
    if IGNORE_INVALID:
        ok = ok & (x >= 0)
    return tl.where(ok, x.to(tl.int32) + 1, BLOCK_E - 1)


@triton.jit
def _same_run(key_a, count_a, key_b, count_b):
    # (last key, length of the run of that key at the end): associative on sorted keys
    return key_b, tl.where(key_a == key_b, count_a + count_b, count_b)


@triton.jit
def _sorted_ranks(b, SUB: tl.constexpr):
    """Sort a chunk by (bucket, position): each entry's bucket, position in the chunk and
    rank among the chunk's tokens of that bucket, in key order."""
    key = tl.sort(b * SUB + tl.arange(0, SUB))
    bucket = key // SUB
    _, run = tl.associative_scan((bucket, tl.full([SUB], 1, tl.int32)), 0, _same_run)
    return bucket, key % SUB, run - 1


@triton.jit
def _counts(b, n_buckets, BLOCK_E: tl.constexpr):
    """Tokens per bucket (the junk bucket, and any past ``n_buckets``, count none)."""
    e = tl.arange(0, BLOCK_E)
    return tl.where(e < n_buckets, tl.histogram(b, BLOCK_E), 0)


@triton.jit
def _starts(counts, cumsum_ptr, post_pad_ptr, n_buckets, block_size, BLOCK_E: tl.constexpr):
    """Pad the counts to ``block_size``; write the bucket starts and the padded total
    (``cumsum_buffer``, ``num_tokens_post_pad``); return the bucket ends."""
    e = tl.arange(0, BLOCK_E)
    padded = (counts + block_size - 1) // block_size * block_size
    ends = tl.cumsum(padded, axis=0)
    tl.store(cumsum_ptr + e, ends - padded, mask=e < n_buckets)
    total = tl.sum(padded, axis=0)
    tl.store(cumsum_ptr + n_buckets, total)
    tl.store(post_pad_ptr, total)
    return ends


@triton.jit
def _expert_ids(ends, expert_ids_ptr, first, last, n_buckets, block_size,
                BLOCK_E: tl.constexpr, BLOCK_J: tl.constexpr):
    """``expert_ids[first:last]`` from the buckets' padded ends (``last`` already cut to
    the blocks the padded total holds)."""
    e_ok = tl.arange(0, BLOCK_E) < n_buckets
    for j0 in range(first, last, BLOCK_J):
        j = j0 + tl.arange(0, BLOCK_J)
        # block j's bucket is the number of buckets that end at or before its first slot
        done = (ends[None, :] <= (j * block_size)[:, None]) & e_ok[None, :]
        owner = tl.sum(done.to(tl.int32), axis=1)
        tl.store(expert_ids_ptr + j, owner - 1, mask=j < last)


@triton.jit
def _fill(sorted_ptr, start, end, numel, BLOCK_F: tl.constexpr):
    for f in range(start, end, BLOCK_F):
        offs = f + tl.arange(0, BLOCK_F)
        tl.store(sorted_ptr + offs, tl.full([BLOCK_F], 0, tl.int32) + numel, mask=offs < end)


@triton.jit
def _owned_blocks(ends, expert_ids_ptr, first, count, n_expert_ids, n_buckets, block_size,
                  BLOCK_E: tl.constexpr, BLOCK_J: tl.constexpr):
    """``expert_ids`` of blocks ``first .. first + count`` that the padded total holds (the
    total is the last bucket end) and that the buffer has room for."""
    n_blocks = tl.minimum(tl.max(ends, axis=0) // block_size, n_expert_ids)
    _expert_ids(ends, expert_ids_ptr, first, tl.minimum(first + count, n_blocks), n_buckets,
                block_size, BLOCK_E, BLOCK_J)


@triton.jit
def _place_counted(cumsum_ptr, post_pad_ptr, sorted_ptr, expert_ids_ptr, bucket, rank, token,
                   ok, n_buckets, block_size, n_expert_ids, BLOCK_E: tl.constexpr,
                   BLOCK_J: tl.constexpr):
    """The single programs' end, once ``cumsum_buffer`` holds each bucket's count: the
    starts, ``num_tokens_post_pad``, every block's expert, then each routed token (``ok``)
    at its bucket's start plus its ``rank``.  Each barrier makes every thread's stores land
    before any thread reads or overwrites them (the counts, then the starts and the fill)."""
    e = tl.arange(0, BLOCK_E)
    tl.debug_barrier()
    counts = tl.load(cumsum_ptr + e, mask=e < n_buckets, other=0)
    tl.debug_barrier()  # every thread has its counts before the starts overwrite them
    ends = _starts(counts, cumsum_ptr, post_pad_ptr, n_buckets, block_size, BLOCK_E)
    _owned_blocks(ends, expert_ids_ptr, 0, n_expert_ids, n_expert_ids, n_buckets, block_size,
                  BLOCK_E, BLOCK_J)
    tl.debug_barrier()  # the fill and the starts, by any thread, before the placement
    base = tl.load(cumsum_ptr + bucket, mask=ok, other=0)
    tl.store(sorted_ptr + base + rank, token, mask=ok)


@triton.jit(do_not_specialize=["numel", "n_sorted", "fill_per_program"])
def align_count_kernel(ids_ptr, counts_ptr, sorted_ptr, numel, n_buckets, n_sorted,
                       fill_per_program, IGNORE_INVALID: tl.constexpr,
                       SUB: tl.constexpr, BLOCK_E: tl.constexpr, PAD: tl.constexpr,
                       BLOCK_F: tl.constexpr,
                       USE_PDL: tl.constexpr = False):
    pdl_prologue(USE_PDL)
    chunk = tl.program_id(0)
    b = _buckets(ids_ptr, chunk * SUB, numel, n_buckets, IGNORE_INVALID, SUB, BLOCK_E)
    e = tl.arange(0, BLOCK_E)
    tl.store(counts_ptr + chunk * BLOCK_E + e, _counts(b, n_buckets, BLOCK_E))
    if PAD:
        start = chunk * fill_per_program
        _fill(sorted_ptr, start, tl.minimum(start + fill_per_program, n_sorted), numel,
              BLOCK_F)


@triton.jit(do_not_specialize=["n_chunks"])
def align_scan_kernel(counts_ptr, cumsum_ptr, post_pad_ptr, n_chunks, n_buckets, block_size,
                      BLOCK_C: tl.constexpr, BLOCK_E: tl.constexpr,
                      USE_PDL: tl.constexpr = False):
    pdl_prologue(USE_PDL)
    e = tl.arange(0, BLOCK_E)
    carry = tl.zeros([BLOCK_E], dtype=tl.int32)
    for c0 in range(0, n_chunks, BLOCK_C):
        c = c0 + tl.arange(0, BLOCK_C)
        ptrs = counts_ptr + c[:, None] * BLOCK_E + e[None, :]
        tile = tl.load(ptrs, mask=(c < n_chunks)[:, None], other=0)
        before = tl.cumsum(tile, axis=0) - tile + carry[None, :]
        tl.store(ptrs, before, mask=(c < n_chunks)[:, None])
        carry += tl.sum(tile, axis=0)
    _starts(carry, cumsum_ptr, post_pad_ptr, n_buckets, block_size, BLOCK_E)


@triton.jit(do_not_specialize=["numel", "n_expert_ids", "blocks_per_program"])
def align_place_kernel(ids_ptr, counts_ptr, cumsum_ptr, sorted_ptr, expert_ids_ptr, numel,
                       n_buckets, block_size, n_expert_ids, blocks_per_program,
                       IGNORE_INVALID: tl.constexpr, SUB: tl.constexpr,
                       BLOCK_E: tl.constexpr, BLOCK_J: tl.constexpr,
                       USE_PDL: tl.constexpr = False):
    pdl_prologue(USE_PDL)
    chunk = tl.program_id(0)
    b = _buckets(ids_ptr, chunk * SUB, numel, n_buckets, IGNORE_INVALID, SUB, BLOCK_E)
    bucket, pos, rank = _sorted_ranks(b, SUB)
    ok = bucket < n_buckets
    base = tl.load(cumsum_ptr + bucket, mask=ok, other=0)
    base += tl.load(counts_ptr + chunk * BLOCK_E + bucket, mask=ok, other=0)
    tl.store(sorted_ptr + base + rank, chunk * SUB + pos, mask=ok)
    # this chunk's share of expert_ids
    e = tl.arange(0, BLOCK_E)
    ends = tl.load(cumsum_ptr + e + 1, mask=e < n_buckets, other=0)
    n_blocks = tl.minimum(tl.load(cumsum_ptr + n_buckets) // block_size, n_expert_ids)
    first = chunk * blocks_per_program
    _expert_ids(ends, expert_ids_ptr, first,
                tl.minimum(first + blocks_per_program, n_blocks), n_buckets, block_size,
                BLOCK_E, BLOCK_J)


@triton.jit(do_not_specialize=["numel", "n_chunks", "n_expert_ids", "blocks_per_program"])
def align_scan_place_kernel(ids_ptr, counts_ptr, starts_ptr, cumsum_ptr, post_pad_ptr,
                            sorted_ptr, expert_ids_ptr, numel, n_chunks, n_buckets,
                            block_size, n_expert_ids, blocks_per_program,
                            IGNORE_INVALID: tl.constexpr, SUB: tl.constexpr,
                            BLOCK_E: tl.constexpr, BLOCK_J: tl.constexpr,
                            BLOCK_C: tl.constexpr,
                            USE_PDL: tl.constexpr = False):
    """The scan and the placement in one launch, for few chunks: each program sums every
    chunk's counts itself (the totals, and the chunks before its own), so no third launch
    waits on a one-program scan.  Its bucket starts reach its tokens through its own row of
    ``starts_ptr`` (a gather by bucket through memory, behind a barrier); program 0 writes
    ``cumsum_buffer`` and ``num_tokens_post_pad``."""
    pdl_prologue(USE_PDL)
    chunk = tl.program_id(0)
    e = tl.arange(0, BLOCK_E)
    total = tl.zeros([BLOCK_E], dtype=tl.int32)
    before = tl.zeros([BLOCK_E], dtype=tl.int32)
    for c0 in range(0, n_chunks, BLOCK_C):
        c = c0 + tl.arange(0, BLOCK_C)
        tile = tl.load(counts_ptr + c[:, None] * BLOCK_E + e[None, :],
                       mask=(c < n_chunks)[:, None], other=0)
        total += tl.sum(tile, axis=0)
        before += tl.sum(tl.where((c < chunk)[:, None], tile, 0), axis=0)
    padded = (total + block_size - 1) // block_size * block_size
    ends = tl.cumsum(padded, axis=0)
    if chunk == 0:
        _starts(total, cumsum_ptr, post_pad_ptr, n_buckets, block_size, BLOCK_E)
    tl.store(starts_ptr + chunk * BLOCK_E + e, ends - padded + before)
    b = _buckets(ids_ptr, chunk * SUB, numel, n_buckets, IGNORE_INVALID, SUB, BLOCK_E)
    bucket, pos, rank = _sorted_ranks(b, SUB)
    ok = bucket < n_buckets
    tl.debug_barrier()  # this program's row of starts, by any thread, before the gather
    base = tl.load(starts_ptr + chunk * BLOCK_E + bucket, mask=ok, other=0)
    tl.store(sorted_ptr + base + rank, chunk * SUB + pos, mask=ok)
    _owned_blocks(ends, expert_ids_ptr, chunk * blocks_per_program, blocks_per_program,
                  n_expert_ids, n_buckets, block_size, BLOCK_E, BLOCK_J)


@triton.jit
def _run_ends(bucket, SUB: tl.constexpr):
    """True where an entry (in key order) is the last of its bucket's run."""
    _, back = tl.associative_scan((tl.flip(bucket, 0), tl.full([SUB], 1, tl.int32)), 0,
                                  _same_run)
    return tl.flip(back, 0) == 1


@triton.jit(do_not_specialize=["numel", "n_sorted", "n_expert_ids"])
def align_one_launch_kernel(ids_ptr, sorted_ptr, expert_ids_ptr, post_pad_ptr, cumsum_ptr,
                            numel, n_buckets, block_size, n_sorted, n_expert_ids,
                            IGNORE_INVALID: tl.constexpr, PAD: tl.constexpr,
                            SUB: tl.constexpr, BLOCK_E: tl.constexpr, BLOCK_J: tl.constexpr,
                            BLOCK_F: tl.constexpr, USE_PDL: tl.constexpr = False):
    """The whole alignment in one program (grid ``(1,)``), for the smallest inputs (up to
    ``launch.SORT_MAX_ENTRIES`` routed tokens): one sorted chunk of every routed token
    (``SUB``).

    Fill, sort, count, then :func:`_place_counted`.  Every loop bound is an argument or a
    value this program computed, never a host read, so a CUDA graph can capture it.  The
    counts come from the sorted runs, not from ``tl.histogram``: the last entry of each
    bucket's run writes its run length into ``cumsum_buffer`` (zeroed first), so the work
    does not grow with the bucket count (a histogram over 1024 bins made one token of a
    512-expert model 2.4x slower on the H100).  The order inside a bucket is the tokens'.
    """
    pdl_prologue(USE_PDL)
    if PAD:
        _fill(sorted_ptr, 0, n_sorted, numel, BLOCK_F)
    b = _buckets(ids_ptr, 0, numel, n_buckets, IGNORE_INVALID, SUB, BLOCK_E)
    bucket, pos, rank = _sorted_ranks(b, SUB)
    ok = bucket < n_buckets
    e = tl.arange(0, BLOCK_E)
    tl.store(cumsum_ptr + e, tl.zeros([BLOCK_E], dtype=tl.int32), mask=e < n_buckets)
    last = _run_ends(bucket, SUB) & ok
    tl.debug_barrier()
    tl.store(cumsum_ptr + bucket, rank + 1, mask=last)
    _place_counted(cumsum_ptr, post_pad_ptr, sorted_ptr, expert_ids_ptr, bucket, rank, pos,
                   ok, n_buckets, block_size, n_expert_ids, BLOCK_E, BLOCK_J)


@triton.jit(do_not_specialize=["numel", "n_sorted", "n_expert_ids"])
def align_atomic_one_launch_kernel(ids_ptr, sorted_ptr, expert_ids_ptr, post_pad_ptr,
                                   cumsum_ptr, numel, n_buckets, block_size, n_sorted,
                                   n_expert_ids, IGNORE_INVALID: tl.constexpr,
                                   PAD: tl.constexpr, SUB: tl.constexpr,
                                   BLOCK_E: tl.constexpr, BLOCK_J: tl.constexpr,
                                   BLOCK_F: tl.constexpr, USE_PDL: tl.constexpr = False):
    """The single program without the sort, for the decode sizes above
    ``launch.SORT_MAX_ENTRIES`` routed tokens from sm_70 (``launch.one_launch_atomic``;
    Triton's atomics carry a memory order, which older PTX lacks): a token's rank
    in its bucket is what an atomic increment of the bucket's count in ``cumsum_buffer``
    returns, so the order inside a bucket is the order the increments landed in, not the
    tokens' (sgl-kernel's placement has no fixed order either; sglang's fused MoE reads
    each row of a block on its own).  Then :func:`_place_counted`, as the sorting one."""
    pdl_prologue(USE_PDL)
    if PAD:
        _fill(sorted_ptr, 0, n_sorted, numel, BLOCK_F)
    b = _buckets(ids_ptr, 0, numel, n_buckets, IGNORE_INVALID, SUB, BLOCK_E)
    ok = b < n_buckets
    e = tl.arange(0, BLOCK_E)
    tl.store(cumsum_ptr + e, tl.zeros([BLOCK_E], dtype=tl.int32), mask=e < n_buckets)
    tl.debug_barrier()
    rank = tl.atomic_add(cumsum_ptr + b, tl.full([SUB], 1, tl.int32), mask=ok)
    _place_counted(cumsum_ptr, post_pad_ptr, sorted_ptr, expert_ids_ptr, b, rank,
                   tl.arange(0, SUB), ok, n_buckets, block_size, n_expert_ids, BLOCK_E,
                   BLOCK_J)


# hidden and the strides come divided by ALIGN (runtime.vector_align), multiplied back by
# the constexpr so that the loads are vectorised at any width; the quotients are not
# specialised (one binary a width class).
@triton.jit(do_not_specialize=["hidden_q", "stride_xt_q", "stride_xk_q", "stride_o_q"])
def moe_sum_kernel(x_ptr, out_ptr, hidden_q, topk, stride_xt_q, stride_xk_q, stride_o_q, scale,
                   BLOCK_H: tl.constexpr, SCALE: tl.constexpr, ALIGN: tl.constexpr = 1,
                   USE_PDL: tl.constexpr = False):
    pdl_prologue(USE_PDL)
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
