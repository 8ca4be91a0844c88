"""Launch rules of the alignment kernels and of ``moe_sum_kernel``, and the sweep space of
the latter.

Alignment on the Triton path takes one single-program launch for small inputs -- at most
:data:`ONE_LAUNCH_MAX_ENTRIES` routed tokens and :data:`ONE_LAUNCH_MAX_BUCKETS` buckets,
and with the padding fill at most :data:`ONE_LAUNCH_MAX_FILL` slots of
``sorted_token_ids`` -- and three launches over sorted chunks otherwise (see
``triton.py``).  Why: decode (1 to 64 tokens, top-k up to 8) runs this op every step, and
there three launches cost more than their work (on the H200, 1 token x top-8 of 128
experts took 7.9 us against sgl-kernel's 4.5 us).  The single program walks one-hot tiles
serially, so it only pays while the input is small: timed on the H200 on 2026-12-02 (top-8
of 128 experts, block 64, CUDA-graph replay) 4.0 us against 7.4 us for three launches at 8
routed tokens, 8.5 against 9.8 us at 64, 24.2 against 12.6 us at 256, so
:data:`ONE_LAUNCH_MAX_ENTRIES` is 32.  The other limits: 1024 buckets covers 512-expert
models (Qwen3-Next) and keeps the one-hot tiles at no fewer than 8 tokens a step; 65536
slots caps the fill that one program writes alone at 256 KiB.  The tests raise the entry
limit to :data:`ONE_LAUNCH_ON` (1024) to check the path on larger inputs too; so does
``benchmarks/kernels.py --moe-align-one-launch`` to time it there.

The chunked path sorts chunks of :func:`chunk_entries` tokens, about
:data:`CHUNK_PROGRAMS` of them.  On the H100 (2026-12-05,
``benchmarks/results/kernels-moe-align-h100-2026-12-05.md``) it took 7.9-18.7 us from 256
to 16384 tokens at top-8 of 128-384 experts, where the one-hot chunks before it took
9.8-481 us and sgl-kernel 4.8-60 us; below about 2048 tokens its three launches (8-9 us
together) are what is left of the gap.  :data:`FUSED_MAX_CHUNKS` and
:data:`SORTED_ONE_LAUNCH` switch on two kernels meant to close it, off until a GPU has
run and timed them.
"""

from __future__ import annotations

from ...runtime import DECODE_ROWS, cdiv, next_pow2
from ..space import Config, fits, pow2s, upto

MAX_BUCKETS = 4096
"""Bucket counts above this run on the plain-PyTorch path."""
TILE = 8192
"""Elements of the ``[blocks, buckets]`` tile that looks up the bucket of each block."""
ONE_LAUNCH_ON = 1024
"""Routed tokens the single-program path is tested up to (the tests' limit)."""
ONE_LAUNCH_MAX_ENTRIES = 32
"""Where the single-program path pays (H200, see above); 0 turns it off."""
ONE_LAUNCH_MAX_BUCKETS = 1024
ONE_LAUNCH_MAX_FILL = 65536
"""``sorted_token_ids`` slots, when ``pad_sorted_token_ids`` asks for the fill."""
ONE_LAUNCH_WARPS = 8
"""One program: more threads per program is its only parallelism."""
FILL_STEP = 2048
"""Slots the single program fills per step."""
COUNT_FILL_STEP = 1024
"""Slots each counting program of the three-launch path fills per step."""
FUSED_MAX_CHUNKS = 0
"""Up to this many chunks the scan runs inside the placing programs (two launches, each
program summing every chunk's counts); above it a one-program scan between them (three).
0: off, until a GPU has run and timed it (16 is the value to time first)."""
SORTED_ONE_LAUNCH = False
"""The single program sorts (``align_sorted_one_launch_kernel``) instead of walking one-hot
tiles: off until a GPU has run and timed it (its first version, counting with
``tl.histogram``, took 12.2 against 5.2 us for one token of 512 experts on the H100)."""
CHUNK_PROGRAMS = 128
"""The three-launch path aims at this many chunks (about one per SM of an H100/H200)..."""
CHUNK_MIN = 256
CHUNK_MAX = 2048
"""... of this many routed tokens each, at least and at most (a power of two: the sort)."""


def one_launch(numel: int, n_buckets: int, n_sorted: int, pad: bool) -> bool:
    """Whether the Triton path takes the single-program kernel (sizes only, no device read)."""
    return (0 < numel <= ONE_LAUNCH_MAX_ENTRIES and n_buckets <= ONE_LAUNCH_MAX_BUCKETS
            and (not pad or n_sorted <= ONE_LAUNCH_MAX_FILL))


def _block_e(n_buckets: int) -> int:
    """Bucket lanes: a power of two above the bucket count, the last one the junk bucket."""
    return next_pow2(n_buckets + 1)


def _steps(block_e: int) -> int:
    """``expert_ids`` entries (and, in the scan, chunk rows) per step."""
    return max(1, TILE // block_e)


def one_config(numel: int, n_buckets: int) -> Config:
    """The single-program kernel's blocks for ``numel`` routed tokens: one-hot tiles of
    ``BLOCK_T`` tokens (``TILE`` values at most), or with :data:`SORTED_ONE_LAUNCH` all of
    them sorted at once (``SUB``)."""
    block_e = _block_e(n_buckets)
    tokens = {"SUB": max(16, next_pow2(numel))} if SORTED_ONE_LAUNCH else {
        "BLOCK_T": min(TILE // block_e, max(16, next_pow2(numel)))}
    return {**tokens, "BLOCK_E": block_e, "BLOCK_J": _steps(block_e), "BLOCK_F": FILL_STEP,
            "num_warps": ONE_LAUNCH_WARPS}


def chunk_entries(numel: int) -> int:
    """Routed tokens per chunk of the three-launch path."""
    return min(CHUNK_MAX, max(CHUNK_MIN, next_pow2(cdiv(numel, CHUNK_PROGRAMS))))


def fused(numel: int) -> bool:
    """Whether the chunked path takes two launches (the scan inside the placement)."""
    return cdiv(numel, chunk_entries(numel)) <= FUSED_MAX_CHUNKS


def chunked_config(numel: int, n_buckets: int) -> Config:
    """The three-launch path's blocks: ``SUB`` routed tokens a chunk, ``BLOCK_J``
    ``expert_ids`` entries (and chunk rows of the scan) a step."""
    block_e = _block_e(n_buckets)
    return {"SUB": chunk_entries(numel), "BLOCK_E": block_e, "BLOCK_J": _steps(block_e)}


SUM_KNOBS = ("BLOCK_H", "num_warps")


def sum_config(tokens: int, hidden: int) -> Config:
    """``moe_sum_kernel``'s ``BLOCK_H`` and ``num_warps``."""
    # 1024 columns and 4 warps a program (0.98-0.99x the AOT kernel at 4096-16384 tokens
    # on an H200); at 1-32 tokens (top-8, hidden 4096/8192) 512 columns and 8 warps are
    # the best or within 4%, 8-22% less time (twice the programs; the top-k loop is short).
    block_h = min(next_pow2(hidden), 512 if tokens <= DECODE_ROWS else 1024)
    return {"BLOCK_H": block_h,
            "num_warps": 8 if tokens <= DECODE_ROWS and block_h == 512 else 4}


def sum_grid(tokens: int, hidden: int, cfg: Config) -> tuple[int, int]:
    return (tokens, cdiv(hidden, cfg["BLOCK_H"]))


def sum_candidates(tokens: int, hidden: int, current: Config, quick: bool) -> list[Config]:
    """Hidden columns per program and warps (the wrapper: 1024 columns, Triton's default
    warps): at 1-8 tokens that is 4-8 programs."""
    top = next_pow2(hidden)
    blocks = upto((256, 512, 1024) if quick else pow2s(128, 4096), top)
    warps = (1, 2, 4) if quick else (1, 2, 4, 8, 16)
    return [{"BLOCK_H": b, "num_warps": w} for b in blocks for w in warps if fits(b, w, 1, 32)]
