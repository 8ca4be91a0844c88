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
