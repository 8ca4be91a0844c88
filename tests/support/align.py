"""Buffers for ``moe_align_block_size`` tests, as sglang sizes them, full of sentinels.

Each buffer starts with its own sentinel so that a test can tell slots the op wrote from
slots it must leave alone (the padding of ``sorted_token_ids`` without the fill, the
blocks of ``experts_ids`` past the padded total)."""

from __future__ import annotations

import torch

SENTINELS = (-7, -9, -5, -3)  # sorted_token_ids, experts_ids, num_tokens_post_pad, cumsum


def align_buffers(numel: int, n_buckets: int, bs: int, device: str, slack: int = 0
                  ) -> list[torch.Tensor]:
    """The four int32 buffers for ``numel`` routed tokens, each ``slack`` slots longer."""
    most = min(numel * bs, numel + n_buckets * (bs - 1))
    sizes = (most, -(-most // bs), 1, n_buckets + 1)
    return [torch.full((n + slack,), s, dtype=torch.int32, device=device)
            for n, s in zip(sizes, SENTINELS, strict=True)]


def align_reference(ids: list[int], n_buckets: int, bs: int, pad: bool, ignore_invalid: bool,
              before: list[list[int]]) -> list[list[int]]:
    """The four buffers after ``moe_align_block_size`` on the flat ``ids``, given their
    contents ``before`` it: bucket = expert + 1, tokens in order, each bucket padded to
    ``bs``; the padding filled with ``len(ids)`` only with ``pad``; ids out of range (and
    -1 with ``ignore_invalid``) placed nowhere."""
    numel = len(ids)
    buckets: list[list[int]] = [[] for _ in range(n_buckets)]
    lowest = 0 if ignore_invalid else -1
    for i, x in enumerate(ids):
        if lowest <= x < n_buckets - 1:
            buckets[x + 1].append(i)
    sorted_ids = [numel] * len(before[0]) if pad else list(before[0])
    experts, post_pad, cumsum = list(before[1]), list(before[2]), list(before[3])
    pos = 0
    for b, tokens in enumerate(buckets):
        cumsum[b] = pos
        sorted_ids[pos:pos + len(tokens)] = tokens
        size = -(-len(tokens) // bs) * bs
        for block in range(pos // bs, (pos + size) // bs):
            experts[block] = b - 1
        pos += size
    cumsum[n_buckets] = pos
    post_pad[0] = pos
    return [sorted_ids, experts, post_pad, cumsum]


def sort_within_buckets(got: list[list[int]], want: list[list[int]], numel: int) -> None:
    """Sort each bucket's tokens in place in ``got`` and ``want`` (buffers as
    :func:`align_reference` gives them): for a kernel that places a bucket's tokens in no
    fixed order (sgl-kernel's and our atomic single program do), which must still fill the
    first slots of the bucket's share with exactly its tokens, the padding after them as
    the reference has it.  A token in another bucket's share, or lost, still differs."""
    starts = want[3]
    for bucket in range(len(starts) - 1):
        first = starts[bucket]
        count = sum(1 for x in want[0][first:starts[bucket + 1]] if 0 <= x < numel)
        for rows in (got[0], want[0]):
            rows[first:first + count] = sorted(rows[first:first + count])
