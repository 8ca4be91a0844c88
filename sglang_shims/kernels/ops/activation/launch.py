"""Launch rules of the gated-activation kernel (``triton.act_and_mul_kernel``), and its
sweep space: a program covers ``BLOCK`` columns of one row."""

from __future__ import annotations

from ...runtime import DECODE_ROWS, cdiv, next_pow2
from ..space import Config, fits, pow2s, upto

KNOBS = ("BLOCK", "num_warps")


def config(n_rows: int, d: int) -> Config:
    """``BLOCK`` and ``num_warps`` for ``n_rows`` rows of ``d`` outputs."""
    # Measured on an H200, d 4096 and 8192.  Prefill (16384 rows): 2048 columns and 4
    # warps a program are within 2% of the best setting for all three activations.
    # Decode (1-32 rows, gelu_tanh_and_mul, the costliest of the three on the same
    # kernel): 512 columns and 4 warps, i.e. 4x the programs, are the best or within 2%,
    # 18-27% less time than 2048.
    if n_rows <= DECODE_ROWS and d >= 4096:
        return {"BLOCK": 512, "num_warps": 4}
    block = min(next_pow2(d), 2048)
    return {"BLOCK": block, "num_warps": max(1, min(4, block // 256))}


def grid(n_rows: int, d: int, cfg: Config) -> tuple[int, int]:
    return (n_rows, cdiv(d, cfg["BLOCK"]))


def candidates(tokens: int, d: int, current: Config, quick: bool) -> list[Config]:
    """Columns per program and warps: at few rows, smaller blocks mean more programs."""
    top = next_pow2(d)
    blocks = upto((512, 1024, 2048) if quick else pow2s(256, 8192), top)
    warps = (2, 4, 8) if quick else (1, 2, 4, 8, 16)
    return [{"BLOCK": b, "num_warps": w} for b in blocks for w in warps if fits(b, w, 1, 32)]
