"""Every launch branch of every Triton wrapper, at the edges of its blocks.

Each wrapper takes its launch (block sizes, grid) from the pure rules in
``kernels/ops/<family>/launch.py``: a decode launch for at most ``DECODE_ROWS`` rows, a
prefill one above, and blocks that follow the width.  The shapes here are asked of those
rules, never copied from them: for each branch, widths and row counts one below, at and
one above a multiple of its block (:func:`aligned_edges`), or around the width where the
block itself changes (:func:`around`), in every dtype the op takes.  Every output starts
NaN (or a sentinel, or a NaN-filled ``torch.empty`` for the outputs an op allocates), so
an element no program writes fails as surely as a wrong one.  The FP8 quantisers also get
rows whose amax is 448 times a power of two: ``amax / 448`` is exact there, and a UE8M0
scale, rounded up to a power of two, must not move.

The Triton path only (the torch path has no launch to get wrong): compiled on a GPU, under
Triton's interpreter on CPU, where the shapes are as small as the edges allow (~30 s on
one core).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch", reason="torch is not installed: the kernel tests need it")

from sglang_shims import kernels as K
from sglang_shims.kernels.device import MEASURED
from sglang_shims.kernels.ops.activation import launch as act_launch
from sglang_shims.kernels.ops.fp8_gemm import launch as mm_launch
from sglang_shims.kernels.ops.fp8_quant import launch as quant_launch
from sglang_shims.kernels.ops.moe_align import launch as align_launch
from sglang_shims.kernels.ops.moe_gate import launch as gate_launch
from sglang_shims.kernels.ops.moe_topk import launch as topk_launch
from sglang_shims.kernels.ops.norm import launch as norm_launch
from sglang_shims.kernels.ops.rope import launch as rope_launch
from sglang_shims.kernels.ops.space import Config
from sglang_shims.kernels.runtime import DECODE_ROWS, cdiv, device_of

from ..support.align import align_buffers, align_reference, sort_within_buckets
from ..support.kernels import has_cuda, select_backend, triton_skip
from ..support.references import (
    DTYPE_IDS,
    DTYPES,
    FP8,
    assert_close,
    assert_fp8,
    assert_matmul,
    block_scales,
    check_topk,
    fp8_operand,
    randn,
    ref_act,
    ref_fused_gate,
    ref_rmsnorm,
    ref_rope,
    ref_topk,
    rope_inputs,
)

triton_skip()  # Triton's interpreter on CPU: before any kernel is defined

DECODE, PREFILL = DECODE_ROWS, DECODE_ROWS + 1
"""The last row count of the decode launches and the first of the prefill ones."""
dtypes = pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
SEED = 20261205


@pytest.fixture
def device(monkeypatch: pytest.MonkeyPatch) -> str:
    """Our Triton kernels: compiled on a GPU, else Triton's interpreter."""
    if triton_skip():
        pytest.skip(triton_skip())
    return select_backend("triton", monkeypatch, has_cuda())


# ------------------------------------------------------------------ sizes from the rules


def around(n: int) -> tuple[int, ...]:
    """One below, at and one above ``n`` (the positive ones)."""
    return tuple(v for v in (n - 1, n, n + 1) if v > 0)


def aligned_edges(config_of: Callable[[int], Config], knob: str, start: int
                  ) -> tuple[int, int, int]:
    """Sizes one below, at and one above a multiple of the block ``config_of(start)[knob]``,
    the first at or past ``start`` where all three get the launch ``start`` gets: the grid's
    last program is partial, full, then a new one of a single element."""
    cfg = config_of(start)
    block = cfg[knob]
    base = max(cdiv(start, block), 1) * block
    for _ in range(64):
        edges = (base - 1, base, base + 1)
        if base > 1 and all(config_of(v) == cfg for v in edges):
            return edges
        base += block
    raise AssertionError(f"no multiple of {knob}={block} past {start} keeps the launch {cfg}")


def decode_split(differs: Callable[[int], bool]) -> int:
    """The narrowest power-of-two width at which the decode launch differs from the prefill
    one (the decode branch of the rule)."""
    found = [w for w in (1 << i for i in range(4, 18)) if differs(w)]
    assert found, "the decode launch never differs from the prefill one: update these cases"
    return found[0]


@contextmanager
def outputs_poisoned() -> Iterator[None]:
    """``torch.empty`` gives NaN (floating dtypes) or -7 (integers) while the op runs, so an
    output it allocates and never writes does not pass by holding an earlier result."""
    real = torch.empty

    def empty(*args: Any, **kwargs: Any) -> torch.Tensor:
        t = real(*args, **kwargs)
        return t.fill_(float("nan") if t.is_floating_point() else -7)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(torch, "empty", empty)
        yield


def nan(shape: tuple[int, ...], dtype: torch.dtype, device: str) -> torch.Tensor:
    return torch.full(shape, float("nan"), dtype=dtype, device=device)


def shape_id(case: tuple[int, ...]) -> str:
    return "x".join(map(str, case))


# ------------------------------------------------------------------ gated activations

ACTS: tuple[tuple[str, Callable[..., torch.Tensor]], ...] = (
    ("silu", K.silu_and_mul), ("gelu", K.gelu_and_mul), ("gelu_tanh", K.gelu_tanh_and_mul))


def act_cases() -> list[tuple[int, int]]:
    """(rows, d): columns a program in both branches, and a row one block wide."""
    split = decode_split(lambda d: act_launch.config(DECODE, d) != act_launch.config(PREFILL, d))
    dec = aligned_edges(lambda d: act_launch.config(DECODE, d), "BLOCK", split)
    pre = aligned_edges(lambda d: act_launch.config(PREFILL, d), "BLOCK", split)
    narrow = around(act_launch.config(PREFILL, 100)["BLOCK"])
    return [(1, dec[0]), (3, dec[1]), (DECODE, dec[2]), (2, narrow[0]),
            (PREFILL, pre[0]), (PREFILL, pre[2]), (PREFILL, narrow[2])]


@dtypes
@pytest.mark.parametrize("case", act_cases(), ids=shape_id)
def test_act_and_mul(device: str, gen: torch.Generator, case: tuple[int, int],
                     dtype: torch.dtype) -> None:
    rows, d = case
    kind, fn = ACTS[(rows + d) % len(ACTS)]
    x = randn(gen, rows, 2 * d, dtype=dtype, device=device, scale=2.0)
    out = nan((rows, d), dtype, device)
    fn(x, out)
    assert_close(out, ref_act(x, kind), dtype, f"{fn.__name__} {rows}x{d}")


# ------------------------------------------------------------------ RMSNorm

NORMS = (K.rmsnorm, K.fused_add_rmsnorm, K.gemma_rmsnorm, K.gemma_fused_add_rmsnorm)


def norm_cases() -> list[tuple[int, int]]:
    """(rows, hidden): rows a program around both branches' blocks, one-pass widths around
    a block, the decode launch's wide rows, and the looped kernel's blocks."""
    def rows_of(hidden: int) -> Callable[[int], Config]:
        return lambda rows: norm_launch.config(rows, hidden, False)

    narrow = 100
    block_n = norm_launch.config(DECODE, narrow, False)["BLOCK_N"]

    def differs(hidden: int) -> bool:  # beyond the rows a program, which follow the rows
        dec, pre = (norm_launch.config(r, hidden, False) for r in (DECODE, PREFILL))
        return dec["BLOCK_M"] == pre["BLOCK_M"] and dec != pre

    wide = decode_split(differs)
    looped = norm_launch.MAX_SINGLE_PASS + 1
    return [
        *((r, narrow) for r in aligned_edges(rows_of(narrow), "BLOCK_M", DECODE)),
        *((r, narrow) for r in aligned_edges(rows_of(narrow), "BLOCK_M", PREFILL + 1)),
        *((3, h) for h in around(block_n)),
        (DECODE, wide - 1), (PREFILL, wide + 1),
        (1, norm_launch.MAX_SINGLE_PASS), (2, looped),
        *((1, h) for h in aligned_edges(lambda h: norm_launch.config(1, h, False), "BLOCK_N",
                                        looped)),
    ]


@dtypes
@pytest.mark.parametrize("case", norm_cases(), ids=shape_id)
def test_norm(device: str, gen: torch.Generator, case: tuple[int, int],
              dtype: torch.dtype) -> None:
    rows, hidden = case
    fn = NORMS[(rows + hidden) % len(NORMS)]
    gemma = fn.__name__.startswith("gemma")
    x = randn(gen, rows, hidden, dtype=dtype, device=device)
    w = randn(gen, hidden, dtype=dtype, device=device)
    what = f"{fn.__name__} {rows}x{hidden}"
    if fn in (K.rmsnorm, K.gemma_rmsnorm):
        out = nan((rows, hidden), dtype, device)
        fn(x, w, 1e-6, out=out)
        assert_close(out, ref_rmsnorm(x, w, 1e-6, gemma), dtype, what)
        return
    r = randn(gen, rows, hidden, dtype=dtype, device=device)
    total = x.double() + r.double()
    fn(x, r, w, 1e-6)
    assert_close(r, total, dtype, what + " residual")
    if norm_launch.single_pass(hidden):
        assert_close(x, ref_rmsnorm(total, w, 1e-6, gemma), dtype, what)
        return
    # the looped kernel: the rms of the exact sum, applied to the residual as stored
    rrms = torch.rsqrt(total.square().mean(-1, keepdim=True) + 1e-6)
    assert_close(x, r.double() * rrms * (w.double() + float(gemma)), dtype, what)


# ------------------------------------------------------------------ RoPE


def rope_cases() -> list[tuple[int, int, int, int]]:
    """(query heads, key heads, head size, rotary dim): head counts around a program's
    share of heads once a token's heads are split, and rotary halves around a block."""
    head = 128

    def heads(n_k: int | None) -> Callable[[int], Config]:
        return lambda n_q: rope_launch.config(n_q, n_k or n_q, head, head)

    split = next(n for n in range(1, 512) if rope_launch.config(n, 8, head, head)["Q_HEADS"] < n)
    cases = [(n_q, 8, head, head) for n_q in aligned_edges(heads(8), "Q_HEADS", split)]
    cases += [(n, n, head, head) for n in aligned_edges(heads(None), "K_HEADS", split)[::2]]
    half = rope_launch.config(4, 2, head, 64)["HALF_BLOCK"]
    cases += [(4, 2, 80, 2 * h) for h in around(half)]  # partial: the pass-through block too
    return cases


@dtypes
@pytest.mark.parametrize("case", rope_cases(), ids=shape_id)
def test_rope(device: str, gen: torch.Generator, case: tuple[int, int, int, int],
              dtype: torch.dtype) -> None:
    n_q, n_k, head, rd = case
    neox = bool((n_q + rd) % 2)
    q, k, cache, pos = rope_inputs(gen, device, dtype, 3, n_q, n_k, head, rd)
    want_q, want_k = ref_rope(q, pos, cache, head, neox), ref_rope(k, pos, cache, head, neox)
    K.apply_rope_with_cos_sin_cache_inplace(pos, q, k, head, cache, neox)
    assert_close(q, want_q, dtype, "query")
    assert_close(k, want_k, dtype, "key")


# ------------------------------------------------------------------ MoE top-k softmax


def topk_cases() -> list[tuple[int, int, int]]:
    """(tokens, experts, k): experts and k around a power of two (the blocks), tokens around
    a multiple of the tokens a program takes."""
    cases = []
    for i, experts in enumerate(around(64)):
        k = around(4)[i]
        rows = aligned_edges(lambda t, e=experts, k=k: topk_launch.config(t, e, k), "BLOCK_M",
                             PREFILL)
        cases += [(t, experts, k) for t in rows]
    return cases


@dtypes
@pytest.mark.parametrize("case", topk_cases(), ids=shape_id)
def test_topk_softmax(device: str, gen: torch.Generator, case: tuple[int, int, int],
                      dtype: torch.dtype) -> None:
    tokens, experts, k = case
    logits = randn(gen, tokens, experts, dtype=dtype, device=device, scale=2.0)
    w = nan((tokens, k), torch.float32, device)
    ids = torch.full((tokens, k), -1, dtype=torch.int32, device=device)
    K.topk_softmax(w, ids, logits, True)
    p, ref_w = ref_topk(logits.cpu(), k, True)
    check_topk(w, ids, p, ref_w, True)


# ------------------------------------------------------------------ moe_fused_gate


def gate_cases() -> list[tuple[int, int, int, int, int]]:
    """(tokens, experts, groups, topk, shared): tokens around a multiple of the tokens a
    program takes, for a power-of-two expert count and one that is not."""
    cases = []
    for experts, groups, topk, shared in ((256, 8, 8, 0), (96, 8, 9, 1)):
        def config_of(t: int, e: int = experts, g: int = groups, k: int = topk) -> Config:
            return gate_launch.config(t, e, g, k)

        full = config_of(1 << 12)["BLOCK_M"]
        cases += [(t, experts, groups, topk, shared)
                  for t in aligned_edges(config_of, "BLOCK_M", full + 1)]
    return cases


@dtypes
@pytest.mark.parametrize("case", gate_cases(), ids=shape_id)
def test_moe_fused_gate(device: str, gen: torch.Generator,
                        case: tuple[int, int, int, int, int], dtype: torch.dtype) -> None:
    """Logits of 0 or 30 (sigmoid 0.5 or 1.0 in fp32) and a bias of multiples of 1/64 in
    [-1/4, 1/4]: every score and group score is exact in every dtype (whatever way the
    device rounds), so ids are exact, ties included (lower index first)."""
    tokens, experts, groups, topk, shared = case
    x = (torch.rand(tokens, experts, generator=gen) < 0.3).to(dtype) * 30
    bias = (torch.randint(-16, 17, (experts,), generator=gen) / 64).to(dtype)
    with outputs_poisoned():
        weights, ids = K.moe_fused_gate(x.to(device), bias.to(device), groups, groups // 2,
                                        topk, shared, 2.5)

    def rnd(v: float) -> float:  # the sigmoid in fp32, as the kernel computes it
        return float(torch.tensor(v, dtype=torch.float64).float())

    for row in range(tokens):
        want_w, want_ids = ref_fused_gate(x[row].tolist(), bias.tolist(), groups, groups // 2,
                                          topk, shared, 2.5, False, rnd)
        assert ids[row].tolist() == want_ids, f"row {row}"
        torch.testing.assert_close(weights[row].double().cpu(), torch.tensor(want_w).double(),
                                   rtol=2e-6, atol=0)


# ------------------------------------------------------------------ moe_sum / moe_sum_reduce


def sum_cases() -> list[tuple[int, int]]:
    """(tokens, hidden): two column tiles and a part in each branch."""
    cases = []
    for rows in (3, DECODE, PREFILL):
        cap = align_launch.sum_config(rows, 1 << 16)["BLOCK_H"]
        edges = aligned_edges(lambda h, r=rows: align_launch.sum_config(r, h), "BLOCK_H",
                              cap + 1)
        cases += [(rows, h) for h in edges[::2]]
    return cases


@dtypes
@pytest.mark.parametrize("case", sum_cases(), ids=shape_id)
def test_moe_sum(device: str, gen: torch.Generator, case: tuple[int, int],
                 dtype: torch.dtype) -> None:
    tokens, hidden = case
    x = randn(gen, tokens, 2, hidden, dtype=dtype, device=device)
    out = nan((tokens, hidden), dtype, device)
    if hidden % 2:
        K.moe_sum_reduce(x, out, 2.5)
        assert_close(out, x.double().sum(dim=1) * 2.5, dtype, "moe_sum_reduce")
    else:
        K.moe_sum(x, out)
        assert_close(out, x.double().sum(dim=1), dtype, "moe_sum")


# ------------------------------------------------------------------ moe_align_block_size


def align_cases() -> list[tuple[int, int, int]]:
    """(routed tokens, buckets, block size): around the sorting single program's limit,
    around the atomic one's, around a chunk of the two launches and of the three (512
    bucket lanes), bucket counts around a power of two, and a single program at its
    bucket limit."""
    most = align_launch.one_launch_limit(65)
    chunk = align_launch.chunked_config(most + 1, 65)["SUB"]
    cases = [(n, 65, 16) for n in around(align_launch.SORT_MAX_ENTRIES)]
    cases += [(n, 65, 16) for n in around(most)]
    cases += [(n, 65, 16) for n in around(max(2, cdiv(most + 2, chunk)) * chunk)]
    cases += [(n, 257, 16) for n in around(2 * chunk)]
    cases += [(most + 9, b, 4) for b in around(64)]
    # the single program's sort at a power of two, at its bucket limit
    top = align_launch.ONE_LAUNCH_MAX_BUCKETS
    cases += [(n, top, 1) for n in around(align_launch.one_launch_limit(top) // 2)]
    return cases


@pytest.mark.parametrize("id_dtype", [torch.int32, torch.int64], ids=["i32", "i64"])
@pytest.mark.parametrize("case", align_cases(), ids=shape_id)
def test_moe_align(device: str, gen: torch.Generator, case: tuple[int, int, int],
                   id_dtype: torch.dtype) -> None:
    numel, n_buckets, bs = case
    pad = bool(numel % 2)
    ids = torch.randint(-1, n_buckets - 1, (numel,), generator=gen).to(id_dtype)
    bufs = align_buffers(numel, n_buckets, bs, device)
    before = [b.tolist() for b in bufs]
    K.moe_align_block_size(ids.to(device), n_buckets, bs, *bufs, pad)
    want = align_reference(ids.tolist(), n_buckets, bs, pad, False, before)
    got = [b.tolist() for b in bufs]
    if align_launch.one_launch(numel, n_buckets, len(got[0]), pad) \
            and align_launch.one_launch_atomic(numel, device_of(bufs[0])):
        sort_within_buckets(got, want, numel)  # atomic ranks: no fixed order in a bucket
    assert got == want


# ------------------------------------------------------------------ FP8 quantisation


def with_amax(x: torch.Tensor, rows: list[int], exponent: int, width: int) -> torch.Tensor:
    """``x`` ([rows, cols]) with each ``width``-wide run of the given rows scaled to an amax
    of exactly ``448 * 2**exponent`` (its largest value set to it, the rest below it)."""
    amax = 448.0 * 2.0**exponent
    runs = x.view(x.shape[0], -1, width)
    for r in rows:
        part = runs[r].float()
        part = part / part.abs().amax(dim=-1, keepdim=True).clamp_min(1e-30) * (amax * 0.99)
        part[:, (r + exponent) % width] = amax if r % 2 else -amax
        runs[r] = part.to(x.dtype)
    return x


def check_scales(got: torch.Tensor, amax: torch.Tensor, ue8m0: bool) -> torch.Tensor:
    """The scales against float64 (exact where ``amax / 448`` is a power of two, or rounded
    up to one); returns the float64 scales."""
    ratio = amax / 448
    if ue8m0:
        want = torch.exp2(torch.ceil(torch.log2(ratio)))
        assert got.double().cpu().tolist() == want.tolist(), "UE8M0 scales"
        return want
    torch.testing.assert_close(got.double().cpu(), ratio, rtol=1e-6, atol=0)
    exact = ratio == torch.exp2(torch.round(torch.log2(ratio)))
    assert (got.double().cpu()[exact] == ratio[exact]).all(), "an exact power-of-two scale moved"
    return ratio


def token_cases() -> list[tuple[int, int]]:
    """(rows, cols): the decode launch's column steps, and the prefill launch's rows a
    program around a multiple (the first prefill row count among them) and columns."""
    def rows_of(cols: int) -> Callable[[int], Config]:
        return lambda rows: quant_launch.token_config(rows, cols)

    step = quant_launch.token_config(1, 1 << 20)["BLOCK_N"]
    wide = quant_launch.token_config(PREFILL, 1 << 20)["BLOCK_N"] + 1
    prefill_rows = aligned_edges(rows_of(wide), "BLOCK_M", PREFILL)
    return [(1, step - 1), (2, step + 1), (DECODE, wide), (PREFILL, wide - 2),
            *((r, wide) for r in prefill_rows)]


@dtypes
@pytest.mark.parametrize("case", token_cases(), ids=shape_id)
def test_per_token_quant(device: str, gen: torch.Generator, case: tuple[int, int],
                         dtype: torch.dtype) -> None:
    per_token_quant(device, gen, case, dtype)


def test_per_token_quant_in_steps_where_the_block_pads(device: str,
                                                       gen: torch.Generator) -> None:
    """The first row count at which a row its power of two pads by half (2049 columns) is
    read in 1024-column steps, the last one a column wide (bf16 only: ~5 s a dtype here)."""
    rows = next(r for r in range(PREFILL, 1 << 13)
                if quant_launch.token_config(r, 2049)["BLOCK_N"] < 2049)
    per_token_quant(device, gen, (rows, 2049), torch.bfloat16)


def per_token_quant(device: str, gen: torch.Generator, case: tuple[int, int],
                    dtype: torch.dtype) -> None:
    rows, cols = case
    x = with_amax(randn(gen, rows, cols, dtype=dtype), [rows - 1, rows // 2], -3, cols)
    x = x.to(device)
    q = nan((rows, cols), torch.float32, device).to(FP8)
    s = nan((rows, 1), torch.float32, device)
    K.sgl_per_token_quant_fp8(x, q, s)
    amax = x.double().abs().amax(dim=1, keepdim=True).cpu()
    scale = check_scales(s, amax, False)
    assert_fp8(q, x.double().cpu() / scale)


def group_cases() -> list[tuple[int, int, int]]:
    """(rows, groups a row, group size): a launch's groups around a multiple of the groups
    a program takes, in both branches (decode: few rows of several groups; prefill: rows
    of one group) and two group sizes."""
    cases = []
    for gs in (128, 64):
        for rows in (DECODE, PREFILL):
            def config_of(n: int, r: int = rows, g: int = gs) -> Config:
                return quant_launch.group_config(r, n, g)

            per = config_of(1 << 16)["BLOCK_G"]
            low, _, high = aligned_edges(config_of, "BLOCK_G", max(per + 1, rows))
            for n in (low, high):
                few = next(r for r in (3, 2, 1) if n % r == 0)
                cases.append((few, n // few, gs) if rows == DECODE else (n, 1, gs))
    return [*cases, (PREFILL, 1, 128)]


@dtypes
@pytest.mark.parametrize("ue8m0", [False, True], ids=["", "ue8m0"])
@pytest.mark.parametrize("case", group_cases(), ids=shape_id)
def test_per_token_group_quant(device: str, gen: torch.Generator, case: tuple[int, int, int],
                               dtype: torch.dtype, ue8m0: bool) -> None:
    rows, groups, gs = case
    x = with_amax(randn(gen, rows, groups * gs, dtype=dtype), [0, rows - 1], -5, gs)
    x = x.to(device)
    q = nan(x.shape, torch.float32, device).to(FP8)
    s = nan((rows, groups), torch.float32, device)
    K.sgl_per_token_group_quant_8bit(x, q, s, gs, 1e-10, -448.0, 448.0, ue8m0)
    xg = x.double().cpu().view(rows, groups, gs)
    scale = check_scales(s, xg.abs().amax(dim=-1).clamp_min(1e-10), ue8m0)
    assert_fp8(q.view(rows, groups, gs), xg / scale[..., None])


@pytest.mark.skipif(bool(triton_skip()), reason=triton_skip() or "-")
@settings(max_examples=24, deadline=None, derandomize=True)
@given(exponent=st.integers(-14, 6), rows=st.integers(1, 5), groups=st.integers(1, 3),
       ue8m0=st.booleans(), dtype=st.sampled_from(DTYPES),
       backend=st.sampled_from(["triton", "torch"]))
def test_group_scales_at_powers_of_two(exponent: int, rows: int, groups: int, ue8m0: bool,
                                       dtype: torch.dtype, backend: str) -> None:
    """Every group's amax 448 * 2**exponent: each scale is 2**exponent exactly, with or
    without UE8M0 (whose rounding up must not move an exact power), on both paths, and the
    values are the inputs times 2**-exponent, exactly rounded."""
    gs = 128
    x = torch.randn(rows, groups * gs, generator=torch.Generator().manual_seed(exponent))
    x = with_amax(x.to(dtype).view(rows * groups, gs), list(range(rows * groups)), exponent,
                  gs).view(rows, groups * gs)
    with pytest.MonkeyPatch.context() as mp:
        dev = select_backend(backend, mp, has_cuda())
        q = nan(x.shape, torch.float32, dev).to(FP8)
        s = nan((rows, groups), torch.float32, dev)
        K.sgl_per_token_group_quant_8bit(x.to(dev), q, s, gs, 1e-10, -448.0, 448.0, ue8m0)
    assert s.cpu().double().flatten().tolist() == [2.0**exponent] * (rows * groups)
    assert_fp8(q, x.double() / 2.0**exponent)


@dtypes
@pytest.mark.parametrize("is_static", [False, True], ids=["dynamic", "static"])
def test_per_tensor_quant(device: str, gen: torch.Generator, dtype: torch.dtype,
                          is_static: bool) -> None:
    """All values a launch around a multiple of a program's block; amax 448 * 2**-2."""
    for n in aligned_tensor_sizes():
        x = with_amax(randn(gen, 1, n, dtype=dtype), [0], -2, n).to(device)
        q = nan((1, n), torch.float32, device).to(FP8)
        s = torch.full((1,), 0.25 if is_static else 0.0, device=device)
        K.sgl_per_tensor_quant_fp8(x, q, s, is_static)
        assert s.item() == 0.25, f"{n}: the scale of amax 112 is 112 / 448 exactly"
        assert_fp8(q, x.double().cpu() / 0.25)


def aligned_tensor_sizes() -> tuple[int, int, int]:
    """Values a per-tensor launch holds around a multiple of a program's block."""
    def config_of(n: int) -> Config:
        return {"BLOCK": quant_launch.tensor_block(n)}

    return aligned_edges(config_of, "BLOCK", quant_launch.tensor_block(1 << 30) + 1)


# ------------------------------------------------------------------ FP8 matmuls


def mm_cases(decode_tiles: bool) -> list[tuple[int, int, int]]:
    """(M, N, K): row counts around the first row tile and the decode limit, each with N
    and K one off a multiple of its tiles (alternately above and below)."""
    first = mm_launch.config(1, 1, decode_tiles=decode_tiles, dev=MEASURED)["BLOCK_M"]
    cases = []
    for i, m in enumerate((first - 1, first + 1, DECODE, PREFILL)):
        cfg = mm_launch.config(m, 1, decode_tiles=decode_tiles, dev=MEASURED)
        side = 1 if i % 2 else -1
        cases.append((m, cfg["BLOCK_N"] + side, cfg["BLOCK_K"] - side))
    return cases


@pytest.mark.parametrize("out_dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("case", mm_cases(True), ids=shape_id)
def test_fp8_scaled_mm(device: str, gen: torch.Generator, case: tuple[int, int, int],
                       out_dtype: torch.dtype) -> None:
    m, n, k = case
    a, weight = fp8_operand(gen, m, k, device), fp8_operand(gen, n, k, device)
    sa = (torch.rand(m, 1, generator=gen) + 0.05) / 64
    sb = (torch.rand(n, generator=gen) + 0.05) / 64
    with outputs_poisoned():
        out = K.fp8_scaled_mm(a, weight.t(), sa.to(device), sb.to(device), out_dtype)
    ad, wd = a.double().cpu(), weight.double().cpu()
    scale = sa.double() * sb.double()[None, :]
    assert_matmul(out, (ad @ wd.t()) * scale, (ad.abs() @ wd.abs().t()) * scale, out_dtype)


@pytest.mark.parametrize("out_dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("case", mm_cases(False), ids=shape_id)
def test_fp8_blockwise_scaled_mm(device: str, gen: torch.Generator,
                                 case: tuple[int, int, int], out_dtype: torch.dtype) -> None:
    m, n, k = case
    kb, nb = cdiv(k, 128), cdiv(n, 128)
    a, weight = fp8_operand(gen, m, k, device), fp8_operand(gen, n, k, device)
    sa, sw = block_scales(gen, m, kb), block_scales(gen, nb, kb)
    x_scale = nan((kb, m), torch.float32, device).t()  # sglang's column-major scales
    x_scale.copy_(sa)
    with outputs_poisoned():
        out = K.fp8_blockwise_scaled_mm(a, weight.t(), x_scale, sw.to(device).t(), out_dtype)
    a_deq = a.double().cpu() * sa.double().repeat_interleave(128, 1)[:, :k]
    w_full = sw.double().repeat_interleave(128, 0).repeat_interleave(128, 1)[:n, :k]
    w_deq = weight.double().cpu() * w_full
    assert_matmul(out, a_deq @ w_deq.t(), a_deq.abs() @ w_deq.abs().t(), out_dtype)


def test_the_cases_take_every_branch() -> None:
    """Decode and prefill row counts wherever a rule has both, and sizes on both sides of a
    block multiple: the cases are asked of the rules, so this notices a rule they no longer
    reach."""
    assert {r for r, _ in act_cases()} >= {DECODE, PREFILL}
    assert {r for r, _ in norm_cases()} >= {DECODE, PREFILL}
    assert {r for r, _ in token_cases()} >= {1, DECODE, PREFILL}
    assert {r for r, _, _ in group_cases()} >= {PREFILL}
    assert {r for r, _ in sum_cases()} >= {DECODE, PREFILL}
    assert {m <= DECODE for m, _, _ in mm_cases(True)} == {True, False}
    paths = {("atomic" if align_launch.one_launch_atomic(n, MEASURED) else "sort")
             if align_launch.one_launch(n, b, 0, False) else
             "two" if align_launch.fused(n, b) else "three" for n, b, _ in align_cases()}
    assert paths == {"sort", "atomic", "two", "three"}
    low, mid, high = aligned_edges(lambda r: norm_launch.config(r, 100, False), "BLOCK_M",
                                   PREFILL)
    block = norm_launch.config(PREFILL, 100, False)["BLOCK_M"]
    assert (low % block, mid % block, high % block) == (block - 1, 0, 1)
