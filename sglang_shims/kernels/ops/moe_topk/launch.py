"""Launch rules of the top-k softmax kernel (``triton.topk_softmax_kernel``): a program
takes ``BLOCK_M`` tokens with all ``BLOCK_E`` experts of each."""

from __future__ import annotations

from ...runtime import cdiv, next_pow2
from ..space import Config

MAX_EXPERTS = 8192
"""Expert counts above this run on the plain-PyTorch path (a row must fit one program)."""


def config(n_rows: int, n_experts: int, topk: int) -> Config:
    """``K_BLOCK``, ``BLOCK_M``, ``BLOCK_E`` and ``num_warps`` for ``n_rows`` tokens of
    ``n_experts``, ``topk`` of them chosen."""
    block_e = next_pow2(n_experts)
    # Small tiles: the top-k loop is a chain of row reductions, cheapest within a warp.
    # Measured on an H200 (128 experts, top-8): 4 rows and 1 warp a program were the
    # fastest or within 0.3 us of it from 1 to 16384 tokens.
    block_m = max(1, min(next_pow2(n_rows), 512 // block_e))
    return {"K_BLOCK": next_pow2(topk), "BLOCK_M": block_m, "BLOCK_E": block_e,
            "num_warps": max(1, min(8, block_m * block_e // 512))}


def grid(n_rows: int, cfg: Config) -> tuple[int]:
    return (cdiv(n_rows, cfg["BLOCK_M"]),)
