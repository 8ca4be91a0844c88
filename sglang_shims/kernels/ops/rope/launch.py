"""Launch rules of the RoPE kernel (``triton.rope_kernel``): one program rotates
``Q_HEADS`` query and ``K_HEADS`` key heads of one token, ``HALF_BLOCK`` pairs each."""

from __future__ import annotations

from ...runtime import cdiv, next_pow2, prev_pow2
from ..space import Config


def config(n_q: int, n_k: int, head_size: int, rotary_dim: int) -> Config:
    """The kernel's block sizes and ``num_warps`` for ``n_q`` query and ``n_k`` key heads of
    ``head_size``, ``rotary_dim`` of them rotated."""
    half_block = next_pow2(max(1, rotary_dim // 2))
    # Both head kinds of a token in one program, up to ~8192 values of it.  Measured on
    # an H200 (16384 tokens, 32 query heads of 128): 4096 query values and 8 warps a
    # program ran at copy speed, 2048 values and 4 warps ~7% slower, and query and key
    # heads in separate programs (the key one mostly idle lanes) ~10% slower.
    blocks = max(1, cdiv((next_pow2(n_q) + next_pow2(n_k)) * 2 * half_block, 8192))
    q_heads = next_pow2(cdiv(n_q, blocks))
    k_heads = next_pow2(cdiv(n_k, blocks))
    warps = max(1, min(8, (q_heads + k_heads) * half_block // 256))
    return {"Q_HEADS": q_heads, "K_HEADS": k_heads, "HALF_BLOCK": half_block,
            "PASS_BLOCK": min(next_pow2(max(1, head_size - rotary_dim)), 256),
            "V_BLOCK": min(next_pow2(head_size), 256),
            "num_warps": prev_pow2(warps)}


def grid(n_tokens: int, n_q: int, n_k: int, cfg: Config) -> tuple[int, int]:
    """One program per token and block of heads."""
    return (n_tokens, max(cdiv(n_q, cfg["Q_HEADS"]), cdiv(n_k, cfg["K_HEADS"])))
