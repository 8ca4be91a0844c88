"""Launch rules of the top-k softmax kernel (``triton.topk_softmax_kernel``): a program
takes ``BLOCK_M`` tokens with all ``BLOCK_E`` experts of each."""

from __future__ import annotations

from ...runtime import cdiv, next_pow2, prev_pow2
from ..space import Config

MAX_EXPERTS = 8192
"""Expert counts above this run on the plain-PyTorch path (a row must fit one program)."""


def config(n_rows: int, n_experts: int, topk: int) -> Config:
    """``K_BLOCK``, ``BLOCK_M``, ``BLOCK_E`` and ``num_warps`` for ``n_rows`` tokens of
    ``n_experts``, ``topk`` of them chosen."""
    block_e = next_pow2(n_experts)
    # Small tiles: the top-k loop is a chain of row reductions, cheapest within a warp.
    # Rows a program: one per ``max(8, BLOCK_E)`` tokens, rounded down to a power of two,
    # at most 16 and at most 512 scores.  Measured on an H100 on 2026-12-06 at the 11
    # routings of benchmarks/model_shapes.toml, 1-16384 tokens, against a cap of 1-16 rows
    # on the earlier rule (as many rows as fit 512 scores): at 8 experts those 64-row
    # programs left 1-4 programs for 32-256 tokens (0.62-0.83x the AOT kernel there; with
    # this rule 0.91-1.00x), and at 128 experts up to 255 tokens 1 row a program was the
    # fastest (top-8, 4-256 tokens: 2.4-2.7 against 3.1-3.3 us).
    # (benchmarks/results/kernels-topk-quant-h100-2026-12-06.md)
    block_m = max(1, min(512 // block_e, 16, prev_pow2(n_rows // max(8, block_e))))
    return {"K_BLOCK": next_pow2(topk), "BLOCK_M": block_m, "BLOCK_E": block_e,
            "num_warps": max(1, min(8, block_m * block_e // 512))}


def grid(n_rows: int, cfg: Config) -> tuple[int]:
    return (cdiv(n_rows, cfg["BLOCK_M"]),)
