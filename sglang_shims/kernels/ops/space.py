"""What the families' candidate spaces (``<family>/launch.py``) are built from.

A candidate is a :data:`Config`: the values of a kernel's launch knobs (its block-size
constexprs, ``num_warps``, ``num_stages``), as ``benchmarks/sweep.py`` passes them to the
kernel in place of the wrapper's own.
"""

from __future__ import annotations

from collections.abc import Sequence

Config = dict[str, int]

WARPS = (1, 2, 4, 8, 16, 32)
"""Every warp count a program may have."""


def pow2s(lo: int, hi: int) -> list[int]:
    """Powers of two in ``[lo, hi]``."""
    out, v = [], 1
    while v <= hi:
        if v >= lo:
            out.append(v)
        v *= 2
    return out


def upto(options: Sequence[int], top: int) -> list[int]:
    """The options not above ``top`` (``[top]`` if none is)."""
    return [o for o in options if o <= top] or [top]


def fits(elements: int, warps: int, lo: float, hi: float) -> bool:
    """Whether a tile of ``elements`` gives each of ``warps * 32`` threads lo..hi values:
    fewer leaves threads idle, more spills registers."""
    return lo <= elements / (32 * warps) <= hi
