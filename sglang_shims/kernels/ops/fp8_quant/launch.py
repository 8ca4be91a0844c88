"""Launch rules of the FP8 quantisation kernels, and the sweep spaces of the per-group and
per-token ones."""

from __future__ import annotations

from ...runtime import DECODE_ROWS, cdiv, next_pow2
from ..space import Config, fits, pow2s, upto

TILE = 4096
"""Values a program holds at once."""
MANY_ROWS = 256
"""Above this many rows the per-token quantiser's layout changes (see :func:`token_config`)."""
PADDED_STEP_MAX_ROWS = 4096
"""... and up to this many, a row padded by more than a quarter takes 1024-column steps."""
GROUP_KNOBS = ("BLOCK_G", "BLOCK_K", "num_warps")
TOKEN_KNOBS = ("BLOCK_M", "BLOCK_N", "num_warps")


def group_config(rows: int, n_groups: int, group_size: int) -> Config:
    """``BLOCK_G`` groups of ``BLOCK_K`` values a program, for ``rows`` rows holding
    ``n_groups`` groups in all."""
    block_k = next_pow2(group_size)
    # 32 groups of 128 a program; at 1-32 rows of 4096/8192 an H200 measured 8 groups a
    # program (4x the programs) as the best or within 4%, 23-28% less time than 32.
    tile = TILE // 4 if rows <= DECODE_ROWS else TILE
    return {"BLOCK_G": max(1, min(next_pow2(n_groups), tile // block_k)), "BLOCK_K": block_k}


def group_grid(n_groups: int, cfg: Config) -> tuple[int]:
    return (cdiv(n_groups, cfg["BLOCK_G"]),)


def group_candidates(n_groups: int, current: Config, quick: bool) -> list[Config]:
    """Groups per program and warps; a group's width (``BLOCK_K``) stays the wrapper's.
    The wrapper packs 32 groups a program: one program for a 4096-wide token."""
    bk = current["BLOCK_K"]
    groups = pow2s(1, min(next_pow2(n_groups), 8 if quick else 64))
    warps = (1, 2, 4) if quick else (1, 2, 4, 8)
    return [{"BLOCK_G": g, "BLOCK_K": bk, "num_warps": w}
            for g in groups for w in warps if fits(g * bk, w, 1, 64)]


def token_config(n_rows: int, n_cols: int) -> Config:
    """``BLOCK_M`` rows of ``BLOCK_N`` columns a step, and ``num_warps``: a program owns
    whole rows (the scale is the row's maximum)."""
    # One whole row a program (up to 8192 columns a step) and a warp per 512 of them, 1 to
    # 8, at every row count (above MANY_ROWS, see below).  Measured at 1-32 rows of
    # 4096/8192 on an H200 (1.6-4x faster than the layout below, which leaves 1-8 programs
    # for the whole GPU there), then at 32-16384 rows of every model width on an H100
    # (2026-12-06, benchmarks/results/kernels-fp8-h100-2026-12-06.md) against that layout:
    # rows of up to 1024 columns packed 4096 values a program, 4 warps, which was the rule
    # above 32 rows.  One row a program was 1.5-4.1x faster at 64 rows, 1.3-2.8x at 256, up to 1.6x
    # at 2048 and 1.7x at 16384; 3-10% slower at 2048 rows of 2304, 4608 and 5120 columns
    # (padded to a power of two, 37-44% of the lanes idle) and 4% at 16384 x 896.
    # Above MANY_ROWS rows, two changes (measured on an H100 on 2026-12-06, every candidate
    # of the sweep at 256, 2048 and 16384 rows of 2304-5120 columns,
    # benchmarks/results/kernels-topk-quant-h100-2026-12-06.md). A row wider than 2048
    # whose power-of-two step idles more than a quarter of its lanes takes 1024-column steps
    # with 2 warps, up to PADDED_STEP_MAX_ROWS rows (2048 x 2304 / 4608 / 5120: 6.8 / 10.8
    # / 11.2 against 8.2 / 13.3 / 13.4 us; at 16384 rows the one step stays faster). A
    # 4096-wide step otherwise takes 4 warps, not 8 (2048 x 3584 / 4096: 7.5 / 7.9 against
    # 8.6 / 8.8 us; 16384 x 2304: 49.5 against 59.5). At 256 rows the rule above was best.
    block_n = min(next_pow2(n_cols), 2 * TILE)
    warps = max(1, min(8, block_n // 512))
    if n_rows > MANY_ROWS:
        if (TILE <= next_pow2(n_cols) <= 2 * TILE and n_rows <= PADDED_STEP_MAX_ROWS
                and pads_a_quarter(n_cols)):
            return {"BLOCK_M": 1, "BLOCK_N": 1024, "num_warps": 2}
        if block_n == TILE:
            warps = 4
    return {"BLOCK_M": 1, "BLOCK_N": block_n, "num_warps": warps}


def pads_a_quarter(n: int) -> bool:
    """Whether ``n``'s power of two leaves more than a quarter of its lanes idle: a switch
    of :func:`token_config` inside a power-of-two class of widths (the compile check's
    enumeration keys its width classes on it too)."""
    return 4 * (next_pow2(n) - n) > next_pow2(n)


def token_grid(n_rows: int, cfg: Config) -> tuple[int]:
    return (cdiv(n_rows, cfg["BLOCK_M"]),)


def token_candidates(tokens: int, hidden: int, current: Config, quick: bool) -> list[Config]:
    """Rows per program, columns per step and warps.  A program owns whole rows (the scale
    is the row's maximum), so at 1-32 tokens 1-32 programs run at most; the wrapper's
    1024-column steps read a 4096-8192-wide row in 4-8 steps, twice."""
    top = min(next_pow2(hidden), 8192)
    rows = pow2s(1, min(next_pow2(tokens), 2 if quick else 4))
    cols = upto((1024, top) if quick else (1024, 2048, 4096, 8192), top)
    warps = (4, 8, 16) if quick else (2, 4, 8, 16, 32)
    return [{"BLOCK_M": m, "BLOCK_N": n, "num_warps": w}
            for m in rows for n in dict.fromkeys(cols) for w in warps
            if fits(m * n, w, 2, 64)]


def tensor_block(n: int) -> int:
    """Values a program of the per-tensor kernels takes, for ``n`` in all."""
    return min(next_pow2(n), TILE)


def tensor_grid(n: int, block: int) -> tuple[int]:
    return (cdiv(n, block),)
