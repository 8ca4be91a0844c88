"""Launch rules of the alignment kernels and of ``moe_sum_kernel``, and the sweep space of
the latter.

Alignment on the Triton path takes one single-program launch for small inputs (see
:func:`one_launch`: up to :func:`one_launch_limit` routed tokens, at most
:data:`ONE_LAUNCH_MAX_BUCKETS` buckets, and with the padding fill at most
:data:`ONE_LAUNCH_MAX_FILL` slots of ``sorted_token_ids``), and chunks sorted in parallel
otherwise: two launches up to :data:`FUSED_MAX_CHUNKS` chunks of at most
:data:`FUSED_MAX_LANES` bucket lanes (:func:`fused`), three beyond (see ``triton.py``).

Why, measured on an H100 on 2026-12-06 (two runs each,
``benchmarks/results/kernels-moe-align-h100-2026-12-06b.md``; the 11 routings of
``benchmarks/model_shapes.toml``, block 64, CUDA-graph replay, PDL on): decode runs this op
every step, and there a launch costs more than the work. Two single programs: up to
:data:`SORT_MAX_ENTRIES` (32) routed tokens the one that sorts them (``tl.sort``: 2.0-4.4
us, 0.2-0.6 us ahead of the other), beyond it the one that ranks them by atomic increments
(:func:`one_launch_atomic`, from sm_70; no fixed order inside a bucket, as sgl-kernel's), whose time
grows with the bucket lanes (``BLOCK_E``) and much less with the tokens than the sort's.
It beats the chunked paths up to 512 routed tokens on up to 127 buckets (128 tokens x
top-4 of 32 experts: 5.0 against 5.7 us for two launches; 128 tokens x top-2 of 8: 3.0
against 4.6 us for the sort), up to 256 on 128-255 (top-8 of 128 at 256: 7.5 against 8.6
us; at 512, 8.8 against 7.6), up to 64 on 256-511 (top-8 of 256: 6.6 against 6.7 us for
the sort at 64, 10.1 against 8.9 for the chunks at 128), and up to 128 on 512-1023, where
the chunks' 1024-lane counts are slower still (top-10 of 512: 8.3 against 9.2 us for the
sort at 80 routed tokens, 14.0 against 15.2 for the chunks at 160, 22.2 against 16.2 at
320). The bucket limit of 1024 covers 512-expert models (Qwen3-Next); 65536 slots caps the
fill that one program writes alone at 256 KiB. The tests raise the entry limit to
:data:`ONE_LAUNCH_ON` (1024) for every bucket count to check both programs on larger inputs
too; so does ``benchmarks/kernels.py --moe-align-one-launch`` to time them there.

The chunked path sorts chunks of :func:`chunk_entries` tokens, about :data:`CHUNK_PROGRAMS`
of them: on up to 255 buckets 4.4-9.7 us up to 2048 routed tokens and 5.1-17.7 us beyond
(sgl-kernel 4.3-8.3 and 5.5-52.1 us), on 256-512 experts 6.7-17.2 and 6.7-45.8 us
(sgl-kernel 4.3-5.1 and 5.2-60.1 us). Up to 16 chunks the placing programs each scan the
counts themselves (two launches: 7.6 against 8.6 us at 512 routed tokens of 128 experts);
with 512 bucket lanes or more, rows of 512-1024 counts per chunk, the one-program scan
between them is faster (three launches: 9.8 against 10.5 us at 512 routed tokens of 256
experts).
"""

from __future__ import annotations

from ...device import Device
from ...runtime import DECODE_ROWS, cdiv, next_pow2
from ..space import Config, fits, pow2s, upto

MAX_BUCKETS = 4096
"""Bucket counts above this run on the plain-PyTorch path."""
TILE = 8192
"""Elements of the ``[blocks, buckets]`` tile that looks up the bucket of each block."""
ONE_LAUNCH_ON = 1024
"""Routed tokens the single-program path is tested up to (the tests' limit)."""
ONE_LAUNCH_MAX_ENTRIES: int | None = None
"""``None``: the measured rule (:func:`one_launch_limit`); a number overrides it for every
bucket count (0 turns the path off; the tests and the benchmark's switch set
:data:`ONE_LAUNCH_ON`)."""
ONE_LAUNCH_MAX_BUCKETS = 1024
ONE_LAUNCH_MAX_FILL = 65536
"""``sorted_token_ids`` slots, when ``pad_sorted_token_ids`` asks for the fill."""
ONE_LAUNCH_WARPS = 8
"""One program: more threads per program is its only parallelism."""
FILL_STEP = 2048
"""Slots the single program fills per step."""
COUNT_FILL_STEP = 1024
"""Slots each counting program of the three-launch path fills per step."""
FUSED_MAX_CHUNKS = 16
"""Up to this many chunks the scan runs inside the placing programs (two launches, each
program summing every chunk's counts); above it a one-program scan between them (three)."""
FUSED_MAX_LANES = 256
"""... and only up to this many bucket lanes (``BLOCK_E``), see above."""
SORT_MAX_ENTRIES = 32
"""Up to this many routed tokens the single program sorts them; beyond, it ranks them by
atomic increments (measured, see above)."""
ATOMIC_ONE_LAUNCH: bool | None = None
"""``None``: the measured choice between the two single programs (:func:`one_launch_atomic`);
``True`` / ``False`` the atomic or the sorting one at every size (the tests and the
benchmark's switches)."""
CHUNK_PROGRAMS = 128
"""The three-launch path aims at this many chunks (about one per SM of an H100/H200)..."""
CHUNK_MIN = 256
CHUNK_MAX = 2048
"""... of this many routed tokens each, at least and at most (a power of two: the sort)."""


def _block_e(n_buckets: int) -> int:
    """Bucket lanes: a power of two above the bucket count, the last one the junk bucket."""
    return next_pow2(n_buckets + 1)


def one_launch_limit(n_buckets: int) -> int:
    """The most routed tokens a single program takes for ``n_buckets`` buckets (measured,
    see above): up to 65536 of ``SUB * BLOCK_E`` and 512 tokens, but 64 on 512 lanes and
    128 from 1024 lanes on, where the chunked path is slower too."""
    if ONE_LAUNCH_MAX_ENTRIES is not None:
        return ONE_LAUNCH_MAX_ENTRIES
    lanes = _block_e(n_buckets)
    if lanes >= 1024:
        return 128
    return 64 if lanes >= 512 else min(512, 65536 // lanes)


def one_launch_atomic(numel: int, dev: Device) -> bool:
    """Whether the single program for ``numel`` routed tokens on ``dev`` ranks them by
    atomic increments (else it sorts them: always where Triton's atomics do not compile)."""
    if not dev.atomics:
        return False
    return numel > SORT_MAX_ENTRIES if ATOMIC_ONE_LAUNCH is None else ATOMIC_ONE_LAUNCH


def one_launch(numel: int, n_buckets: int, n_sorted: int, pad: bool) -> bool:
    """Whether the Triton path takes the single-program kernel (sizes only, no device read)."""
    return (0 < numel <= one_launch_limit(n_buckets) and n_buckets <= ONE_LAUNCH_MAX_BUCKETS
            and (not pad or n_sorted <= ONE_LAUNCH_MAX_FILL))


def _steps(block_e: int) -> int:
    """``expert_ids`` entries (and, in the scan, chunk rows) per step."""
    return max(1, TILE // block_e)


def one_config(numel: int, n_buckets: int) -> Config:
    """The single-program kernel's blocks for ``numel`` routed tokens, all of them sorted at
    once (``SUB``)."""
    block_e = _block_e(n_buckets)
    return {"SUB": max(16, next_pow2(numel)), "BLOCK_E": block_e, "BLOCK_J": _steps(block_e),
            "BLOCK_F": FILL_STEP, "num_warps": ONE_LAUNCH_WARPS}


def chunk_entries(numel: int) -> int:
    """Routed tokens per chunk of the three-launch path."""
    return min(CHUNK_MAX, max(CHUNK_MIN, next_pow2(cdiv(numel, CHUNK_PROGRAMS))))


def fused(numel: int, n_buckets: int) -> bool:
    """Whether the chunked path takes two launches (the scan inside the placement)."""
    return (cdiv(numel, chunk_entries(numel)) <= FUSED_MAX_CHUNKS
            and _block_e(n_buckets) <= FUSED_MAX_LANES)


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
