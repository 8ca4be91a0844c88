"""Launch rules of the RMSNorm kernel (``triton.rmsnorm_kernel``), and its sweep space.

A program owns ``BLOCK_M`` whole rows of ``BLOCK_N`` columns, so a row is read once when it
fits (``SINGLE_PASS``); wider rows loop over blocks of :data:`LOOP_BLOCK`.
"""

from __future__ import annotations

from ...runtime import DECODE_ROWS, cdiv, next_pow2
from ..space import WARPS, Config, fits, pow2s

MAX_SINGLE_PASS = 32768
"""Rows up to this many values are normalised from registers in one pass."""
LOOP_BLOCK = 4096
KNOBS = ("BLOCK_M", "BLOCK_N", "num_warps")


def single_pass(hidden: int) -> bool:
    """Whether a row of ``hidden`` values is normalised in one pass."""
    return hidden <= MAX_SINGLE_PASS


def config(n_rows: int, hidden: int, fused: bool) -> Config:
    """``BLOCK_M``, ``BLOCK_N`` and ``num_warps`` for ``n_rows`` rows of ``hidden`` values
    (``fused``: the residual-add form)."""
    single = single_pass(hidden)
    block_n = next_pow2(hidden) if single else LOOP_BLOCK
    # Narrow rows: several per program, so that a program still moves ~2K values.
    block_m = max(1, min(2048 // block_n, next_pow2(n_rows))) if single else 1
    # Measured on an H200 (bf16).  Prefill (4096/16384 rows of 4096/8192): 8 warps a row
    # is within 1% of the best for the plain norm; the fused one gains ~2% from up to 32.
    # Decode (1-32 rows of 4096/8192): a warp per 256 values, up to 32, is the best or
    # within 3% for all four norms, 7-15% less time than the prefill setting at 8192 wide;
    # measured at those widths only, so narrower rows keep the prefill setting.
    if n_rows <= DECODE_ROWS and block_n >= 4096:
        num_warps = min(32, block_m * block_n // 256)
    else:
        num_warps = max(1, min(32 if fused else 8, block_m * block_n // 512))
    return {"BLOCK_M": block_m, "BLOCK_N": block_n, "num_warps": num_warps}


def grid(n_rows: int, cfg: Config) -> tuple[int]:
    return (cdiv(n_rows, cfg["BLOCK_M"]),)


def candidates(tokens: int, hidden: int, current: Config, quick: bool) -> list[Config]:
    """Rows per program and warps; the row width (``BLOCK_N``) stays the wrapper's, which
    keeps the single-pass form (a row read once).  At 1-32 rows few programs run, so the
    question is how many warps one row deserves (the wrapper caps plain norms at 8)."""
    bn = current["BLOCK_N"]
    rows = pow2s(1, min(next_pow2(tokens), 2 if quick else 8))
    warps = (4, 8, 16, 32) if quick else WARPS
    return [{"BLOCK_M": m, "BLOCK_N": bn, "num_warps": w}
            for m in rows for w in warps if fits(m * bn, w, 2, 64)]
