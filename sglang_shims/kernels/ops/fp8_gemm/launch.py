"""Launch rules of the FP8 matmul kernels (grouped tiles of ``BLOCK_M x BLOCK_N``, K in
steps of ``BLOCK_K``), and the sweep space of ``scaled_mm_kernel``."""

from __future__ import annotations

from ...device import Device
from ...runtime import DECODE_ROWS, cdiv, next_pow2
from ..space import Config

KNOBS = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_warps", "num_stages")
SMEM = 200 * 1024
"""Shared memory a candidate may ask for (stages x (A tile + B tile), fp8 bytes): the H200
gives a block up to 227 KiB; above this the launch fails and the candidate is dropped."""


PDL_MAX_ROWS = 16
"""Up to this many rows the matmuls launch with PDL where the GPU has it (:func:`with_pdl`).
Measured for ``scaled_mm_kernel`` on an H100 (2026-12-06,
``benchmarks/results/kernels-fp8-h100-2026-12-06.md``, two runs each way): at 1-16 rows 7%
less time at every model width (no cell slower), at 32-2048 rows 1-3% less as a geometric
mean but 15-40% more in some cells (32 x 7168 and 8192, 64 and 256 x 5120; why not
measured). The block-scaled kernel follows the same rule, untimed."""


def with_pdl(m: int) -> bool:
    """Whether an FP8 matmul of ``m`` rows asks for PDL (where the GPU has it)."""
    return m <= PDL_MAX_ROWS


DECODE_TILES: tuple[int, int] | None = None
"""``(BLOCK_M, BLOCK_N)`` of ``fp8_scaled_mm`` up to ``DECODE_ROWS`` rows instead of the
rule's (``benchmarks/kernels.py --fp8-decode-tiles MxN`` sets it for a measurement)."""
SPLIT_K: int | None = None
"""``fp8_scaled_mm``'s K split for every launch where :func:`split_k` may split (``None``:
the rule; ``benchmarks/kernels.py --fp8-split-k N`` sets it for a measurement)."""
MAX_SPLIT_TILES = 1024
"""Tiles one stream's arrival counts cover (``fp8_gemm._counts``); a launch of more tiles
is not split (the rule splits grids of up to 1.25 programs an SM only)."""


def split_k(m: int, k: int, cfg: Config, tiles: int, dev: Device) -> int:
    """How many runs of K steps ``fp8_scaled_mm`` cuts an ``[m, k] x [k, n]`` product into
    (1: not split).  Only decode-sized products (up to ``DECODE_ROWS`` rows), where the
    column tiles are the whole grid.  Doubling while the grid stays within 2.5 programs an
    SM and each program keeps two K steps or more.

    Measured on an H100 (132 SMs, 2026-12-06, ``kernels-fp8-split-h100-2026-12-06.md``,
    splits 1 / 2 / 4 / 8 at every model width, 4-32 rows): splitting 64-160 tiles in two
    or four took 2048-5120-wide products from 0.59-0.87x the AOT kernel to 0.64-1.00x;
    grids beyond ~2.5 programs an SM lost up to 25% (7168 columns in two: 0.97x -> 0.77x;
    4096 in four: 0.88x -> 0.69x)."""
    if m > DECODE_ROWS or tiles > MAX_SPLIT_TILES:
        return 1
    steps = cdiv(k, cfg["BLOCK_K"])
    if SPLIT_K is not None:
        return max(1, min(SPLIT_K, steps))
    split = 1
    while 2 * tiles * (2 * split) <= 5 * dev.sm_count and steps >= 4 * split:
        split *= 2
    return split


EPILOGUE = 1024
"""Shared memory Triton adds beside the pipeline buffers (read from the compiled kernels:
sm_90 128 x 128 x 128 in 3 stages takes 3 x 32768 + 1024 bytes)."""


def stages_that_fit(dev: Device, block_m: int, block_n: int, block_k: int, stages: int) -> int:
    """``stages``, or fewer where ``dev`` gives a block too little shared memory for them.

    A stage holds one A tile and one B tile of fp8 (a byte a value).  Hopper and datacenter
    Blackwell keep ``stages`` of them, the other architectures ``stages - 1``; counting
    ``stages`` is right for the former and safe for the latter.  Two stages is the floor
    (one buffer being filled while one is read)."""
    per_stage = block_m * block_k + block_k * block_n
    while stages > 2 and stages * per_stage + EPILOGUE > dev.smem_per_block:
        stages -= 1
    return stages


WIDE_MIN = 2048
"""From this many rows and columns ``fp8_scaled_mm`` may take 128 x 256 tiles
(:func:`_wide_fits`)."""


def _wide_fits(dev: Device, m: int, n: int) -> bool:
    """Whether 128 x 256 output tiles suit an ``[m, n]`` product on ``dev``: ``m`` and ``n``
    of :data:`WIDE_MIN` or more, three stages fit its shared memory, and the tiles fill
    their last wave of programs to 80% or more.

    Measured on an H100 on 2026-12-06 (``kernels-topk-quant-h100-2026-12-06.md``): in
    ``benchmarks/sweep.py --ops fp8_scaled_mm --tokens 256,2048 --quick`` at seven model
    widths, at 2048 rows 128 x 256 was 3-8% faster than 128 x 128 at widths 2048, 3584,
    4096, 5120 and 7168, whose 128 x 256 tiles fill 81-97% of their waves on 132 SMs, and
    not at 2304 and 4608 (55% and 73%: 144 tiles are a wave and 12 programs); at 256 rows
    128 x 128 was the fastest at every width. Then the whole table with the rule: at 16384
    rows 5-10% less time at widths 3584-8192 (0.80-0.95x the AOT kernel -> 0.88-1.06x), but
    12-14% more at 896 and 1024 columns (4-8 column tiles), hence the column floor."""
    if min(m, n) < WIDE_MIN or stages_that_fit(dev, 128, 256, 128, 3) < 3:
        return False
    tiles = cdiv(m, 128) * cdiv(n, 256)
    slots = cdiv(tiles, dev.sm_count) * dev.sm_count
    return 5 * tiles >= 4 * slots


def config(m: int, n: int, *, decode_tiles: bool, dev: Device) -> Config:
    """Tiles and launch options for an ``[m, n]`` output on ``dev`` (decode: a narrow row
    tile; prefill: square 128 tiles, 128 x 256 from :data:`WIDE_MIN` rows where they
    suit).  ``decode_tiles``: the tiles swept for ``fp8_scaled_mm`` (the block-scaled kernel
    steps K by its 128-wide scale blocks and was not swept).  The stages are the measured
    ones wherever they fit ``dev``'s shared memory (every GPU of 99 KiB a block or more, the
    ones Triton compiles e4m3 for)."""
    block_m = min(max(16, next_pow2(m)), 128)
    block_n = 128 if m > 64 else 64
    block_k, stages = 128, 3
    if decode_tiles and m <= DECODE_ROWS:
        # Measured on an H200 (N = K = 4096 and 8192, 1-32 tokens): 16-row tiles, 256 of K
        # a step and 4 stages are the best or within 3%, 1.35-1.65x faster than the tiles
        # above (16 or 32 rows x 64, K steps of 128); 32 columns (twice the programs) up to
        # 16 tokens, 64 beyond.
        block_m, block_n, block_k, stages = 16, 32 if m <= 16 else 64, 256, 4
        if DECODE_TILES is not None:
            block_m, block_n = DECODE_TILES
    elif decode_tiles and _wide_fits(dev, m, n):
        block_n = 256
    return {"BLOCK_M": block_m, "BLOCK_N": block_n, "BLOCK_K": block_k, "GROUP_M": 8,
            "num_warps": 8 if block_m * block_n >= 128 * 128 else 4,
            "num_stages": stages_that_fit(dev, block_m, block_n, block_k, stages)}


def grid(m: int, n: int, cfg: Config) -> tuple[int]:
    return (cdiv(m, cfg["BLOCK_M"]) * cdiv(n, cfg["BLOCK_N"]),)


def candidates(m: int, n: int, current: Config, quick: bool) -> list[Config]:
    """Tiles, warps and stages.  Decode (<= 64 tokens): the weight read is the cost and the
    wrapper's 64-wide column tiles give 64-128 programs on 132 SMs, so narrow column tiles
    come first; deeper K tiles and more stages keep more bytes in flight.  Prefill: square
    tiles around the wrapper's 128 x 128."""
    bms: list[int]
    bns: tuple[int, ...]
    bks: tuple[int, ...]
    stages: tuple[int, ...]
    if m <= 64:
        bms = sorted({16, max(16, next_pow2(m))})
        bns = (16, 32, 64) if quick else (16, 32, 64, 128)
        bks = (128, 256)
        stages = (3, 4) if quick else (3, 4, 5)
    else:
        bms = [128] if quick else [64, 128]
        bns = (128, 256) if quick else (64, 128, 256)
        bks = (64, 128)
        stages = (3, 4)
    out: list[Config] = []
    for bn in bns:
        for bm in bms:
            small = bm * bn <= 1024
            warps = (4,) if quick or small else (4, 8)
            if m > 64:
                warps = (8,) if quick else (4, 8)
            for bk in bks:
                for s in stages:
                    if s * (bm * bk + bk * bn) > SMEM:
                        continue
                    out += [{"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk,
                             "GROUP_M": current["GROUP_M"], "num_warps": w, "num_stages": s}
                            for w in warps]
    return out
