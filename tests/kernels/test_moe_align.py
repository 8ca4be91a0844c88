"""The fallback's MoE plumbing and FP8 activation quantisation against references written here.

Issue 17.  Each op runs on two backends, as in tests/test_kernels.py: ``torch`` (the
plain-PyTorch path) and ``triton`` (on CUDA with a GPU, else Triton's CPU interpreter).

* ``moe_align_block_size``: an exact reference in plain Python lists (bucket = expert + 1,
  tokens in order, each bucket padded to the block size), compared element for element,
  with sentinels in every buffer so that a slot written when it must not be (or not
  written when it must) fails.
* ``moe_sum`` / ``moe_sum_reduce``: float64 sums, tolerances as in tests/test_kernels.py.
* FP8 quantisation: the scale from float64 ``max|x|`` (rtol 1e-6: the kernels compute it
  in fp32), and the values as torch rounds the float64 product to e4m3 (to nearest, ties
  to even).  The kernels multiply in fp32, so a product within fp32 rounding of an e4m3
  midpoint may land on the neighbouring value: at most one e4m3 step off, and at most
  0.1% of the values.  ``test_fp8_ties_round_to_even`` feeds exact midpoints, where no
  such slack exists, and wants torch's bits exactly.

* FP8 matmuls: float64 products of the dequantised operands, within one output step plus
  the fp32 accumulation bound (see :func:`assert_matmul`).
* ``moe_fused_gate``: a plain-Python float64 reference of sgl-kernel's rules, exact ids,
  on data fp32 cannot reorder; the tie rules by hand.
* ``doctor --model-path``: the ops per model family, as docs/fallback-ops.md reads them.

Run time: ~15 s on the 2-core VM (interpreter, small shapes), plus ~15 s for the two
wheel scans of ``test_opset_data_matches_the_wheels`` (marker ``wheels``).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterator

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed: the kernel tests need it")

from sglang_shims import kernels as K  # noqa: E402

from ._align import align_buffers  # noqa: E402
from ._triton import load_triton, select_backend  # noqa: E402

HAS_CUDA = torch.cuda.is_available()
FP8 = torch.float8_e4m3fn
KERNEL_MODULES = ("ops.moe_align.triton", "ops.fp8_quant.triton", "ops.fp8_gemm.triton",
                  "ops.moe_gate.triton")


NO_TRITON = load_triton(KERNEL_MODULES, HAS_CUDA)
BACKENDS = ["torch", pytest.param("triton", marks=pytest.mark.skipif(bool(NO_TRITON),
                                                                     reason=NO_TRITON))]
DTYPES = [torch.bfloat16, torch.float16, torch.float32]
DTYPE_IDS = ["bf16", "fp16", "fp32"]


@pytest.fixture(params=BACKENDS)
def dev(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Selects the path; yields the device the tensors go to."""
    yield select_backend(request.param, monkeypatch, HAS_CUDA)


@pytest.fixture
def gen() -> torch.Generator:
    return torch.Generator().manual_seed(20261201)


# ------------------------------------------------------------------ moe_align_block_size


def ref_align(ids: list[int], n_buckets: int, bs: int, ignore_invalid: bool = False
              ) -> tuple[list[int], list[int], list[int]]:
    """(sorted ids without the tail, expert of each block, bucket starts + total)."""
    buckets: list[list[int]] = [[] for _ in range(n_buckets)]
    for i, e in enumerate(ids):
        if (1 if ignore_invalid else 0) <= e + 1 < n_buckets:
            buckets[e + 1].append(i)
    out: list[int] = []
    experts: list[int] = []
    starts: list[int] = []
    for b, toks in enumerate(buckets):
        starts.append(len(out))
        n = -(-len(toks) // bs) * bs
        out += toks + [len(ids)] * (n - len(toks))
        experts += [b - 1] * (n // bs)
    return out, experts, [*starts, len(out)]


ALIGN_CASES = [  # tokens, top-k, experts, block size
    (4, 3, 4, 4), (1, 2, 8, 16), (37, 2, 8, 16), (300, 8, 64, 64), (5, 8, 256, 128),
    (700, 1, 3, 16),
]


@pytest.mark.parametrize("case", ALIGN_CASES, ids=lambda c: "t{}-k{}-e{}-b{}".format(*c))
@pytest.mark.parametrize("id_dtype", [torch.int32, torch.int64], ids=["i32", "i64"])
def test_moe_align(dev: str, gen: torch.Generator, case: tuple[int, int, int, int],
                   id_dtype: torch.dtype) -> None:
    tokens, k, experts, bs = case
    ids = torch.randint(-1, experts, (tokens, k), generator=gen).to(id_dtype).to(dev)
    n_buckets = experts + 1  # as sglang calls it
    sorted_ids, expert_ids, post_pad, cumsum = align_buffers(ids.numel(), n_buckets, bs, dev)
    K.moe_align_block_size(ids, n_buckets, bs, sorted_ids, expert_ids, post_pad, cumsum, True)
    want, want_experts, want_cumsum = ref_align(ids.flatten().tolist(), n_buckets, bs)
    total = len(want)
    assert post_pad.tolist() == [total]
    assert sorted_ids[:total].tolist() == want
    assert (sorted_ids[total:] == ids.numel()).all(), "the padding fill stops short"
    assert expert_ids[:total // bs].tolist() == want_experts
    assert (expert_ids[total // bs:] == -9).all(), "blocks past the total were written"
    assert cumsum.tolist() == want_cumsum


def test_moe_align_without_padding_fill(dev: str) -> None:
    """pad_sorted_token_ids=False: only token slots are written; padding keeps the caller's."""
    ids = torch.tensor([[2, 0], [2, 2], [-1, 1]], dtype=torch.int32, device=dev)
    sorted_ids, expert_ids, post_pad, cumsum = align_buffers(6, 4, 4, dev)
    K.moe_align_block_size(ids, 4, 4, sorted_ids, expert_ids, post_pad, cumsum, False)
    assert post_pad.item() == 16
    assert sorted_ids[:16].tolist() == [4, -7, -7, -7, 1, -7, -7, -7, 5, -7, -7, -7,
                                        0, 2, 3, -7]
    assert expert_ids[:4].tolist() == [-1, 0, 1, 2]


def test_moe_align_ignore_invalid_and_out_of_range(dev: str) -> None:
    """sglang 0.5.17's ninth argument drops the -1 ids; ids past the buckets never land."""
    ids = torch.tensor([[-1, 0], [5, 1], [1, -1], [-3, 0]], dtype=torch.int64, device=dev)
    sorted_ids, expert_ids, post_pad, cumsum = align_buffers(8, 3, 2, dev)
    K.moe_align_block_size(ids, 3, 2, sorted_ids, expert_ids, post_pad, cumsum, True, True)
    assert post_pad.item() == 4
    assert sorted_ids[:4].tolist() == [1, 7, 3, 4]
    assert expert_ids[:2].tolist() == [0, 1]
    sorted_ids, expert_ids, post_pad, cumsum = align_buffers(8, 3, 2, dev)
    K.moe_align_block_size(ids, 3, 2, sorted_ids, expert_ids, post_pad, cumsum, True, False)
    assert sorted_ids[:6].tolist() == [0, 5, 1, 7, 3, 4]
    assert expert_ids[:3].tolist() == [-1, 0, 1]


def test_moe_align_empty_and_rejects(dev: str) -> None:
    ids = torch.empty((0, 2), dtype=torch.int32, device=dev)
    sorted_ids, expert_ids, post_pad, cumsum = align_buffers(0, 5, 16, dev)
    K.moe_align_block_size(ids, 5, 16, sorted_ids, expert_ids, post_pad, cumsum, True)
    assert post_pad.item() == 0 and cumsum.tolist() == [0] * 6
    ids = torch.zeros((8, 2), dtype=torch.int32, device=dev)
    small = torch.empty(4, dtype=torch.int32, device=dev)
    with pytest.raises(ValueError, match="too small"):
        K.moe_align_block_size(ids, 5, 16, small, expert_ids, post_pad, cumsum, True)
    with pytest.raises(TypeError, match="int32 or int64"):
        K.moe_align_block_size(ids.float(), 5, 16, sorted_ids, expert_ids, post_pad, cumsum)
    with pytest.raises(TypeError, match="token_cnts_buffer"):
        K.moe_align_block_size(ids, 5, 16, sorted_ids, expert_ids, post_pad, cumsum, cumsum)


# ------------------------------------------------------------------ moe_sum / moe_sum_reduce

TOL = {torch.float32: (1e-5, 1e-6), torch.float16: (2.0**-9, 1e-5),
       torch.bfloat16: (2.0**-7, 1e-5)}


def _assert_close(actual: torch.Tensor, ref: torch.Tensor, dtype: torch.dtype) -> None:
    rtol, atol = TOL[dtype]
    a, r = actual.double().cpu(), ref.double().cpu()
    assert not torch.isnan(a).any(), "an element was not written"
    err = (a - r).abs()
    assert (err <= atol + rtol * r.abs()).all(), f"max error {err.max().item():.3g}"


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("shape", [(1, 2, 64), (5, 8, 1000), (3, 1, 7), (9, 9, 130)],
                         ids=lambda s: "x".join(map(str, s)))
def test_moe_sum_reduce(dev: str, gen: torch.Generator, shape: tuple[int, int, int],
                        dtype: torch.dtype) -> None:
    x = torch.randn(*shape, generator=gen).to(dtype).to(dev)
    out = torch.full((shape[0], shape[2]), float("nan"), dtype=dtype, device=dev)
    K.moe_sum_reduce(x, out, 2.5)
    _assert_close(out, x.double().sum(dim=1) * 2.5, dtype)
    out.fill_(float("nan"))
    K.moe_sum(x, out)
    _assert_close(out, x.double().sum(dim=1), dtype)


def test_moe_sum_layouts(dev: str, gen: torch.Generator) -> None:
    """A strided input (a slice) and an output that is a column slice of a wider buffer."""
    big = torch.randn(4, 3, 200, generator=gen).to(dev)
    x = big[:, :, 10:110]
    wide = torch.full((4, 300), float("nan"), device=dev)
    out = wide[:, 50:150]
    K.moe_sum_reduce(x, out, 0.5)
    _assert_close(out, x.double().sum(dim=1) * 0.5, torch.float32)
    assert torch.isnan(wide[:, :50]).all() and torch.isnan(wide[:, 150:]).all()


def test_moe_sum_rejects(dev: str) -> None:
    x = torch.zeros(2, 3, 8, device=dev)
    with pytest.raises(ValueError, match="do not match"):
        K.moe_sum(x, torch.zeros(2, 9, device=dev))
    with pytest.raises(TypeError, match=r"must be torch\.float32"):
        K.moe_sum(x, torch.zeros(2, 8, dtype=torch.float16, device=dev))


# ------------------------------------------------------------------ FP8 quantisation


def _fp8_step(v: torch.Tensor) -> torch.Tensor:
    """The spacing of e4m3 values at each |v| (2**-9 below the smallest normal)."""
    e = torch.floor(torch.log2(v.abs().clamp_min(2.0**-6)))
    return torch.exp2(e - 3)


def assert_fp8(q: torch.Tensor, exact: torch.Tensor) -> None:
    """``q`` (e4m3) against float64 ``exact`` values: torch's rounding of them, bit for bit,
    except within one e4m3 step on at most 0.1% (see the module docstring)."""
    assert q.dtype == FP8
    want = exact.cpu().clamp(-448, 448).to(FP8)
    got_bits, want_bits = q.cpu().view(torch.uint8), want.cpu().view(torch.uint8)
    differ = got_bits != want_bits
    if differ.any():
        g, w = q.cpu().double()[differ], want.double()[differ]
        assert ((g - w).abs() <= _fp8_step(w) * 1.0001).all(), \
            f"{int(differ.sum())} values more than one e4m3 step off: {g[:4]} vs {w[:4]}"
        assert differ.float().mean() <= 1e-3, f"{int(differ.sum())} of {q.numel()} differ"


def _x(gen: torch.Generator, shape: tuple[int, ...], dtype: torch.dtype, dev: str
       ) -> torch.Tensor:
    """Values spread over several binades, some rows far larger than others."""
    x = torch.randn(*shape, generator=gen) * torch.exp2(torch.randint(-4, 6, (*shape[:-1], 1),
                                                                      generator=gen).double())
    return x.to(dtype).to(dev)


GROUP_CASES = [((1, 128), 128), ((7, 384), 128), ((33, 256), 64), ((2, 3, 256), 128)]


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("case", GROUP_CASES, ids=lambda c: f"{'x'.join(map(str, c[0]))}-g{c[1]}")
@pytest.mark.parametrize("layout", ["rows", "columns", "tma"])
def test_per_token_group_quant(dev: str, gen: torch.Generator,
                               case: tuple[tuple[int, ...], int], dtype: torch.dtype,
                               layout: str) -> None:
    shape, gs = case
    x = _x(gen, shape, dtype, dev)
    rows, groups = x.numel() // shape[-1], shape[-1] // gs
    if layout == "rows":
        s = torch.full((rows, groups), float("nan"), device=dev)
    else:  # sglang's column-major scales; "tma" pads the rows to a multiple of 4
        padded = rows if layout == "columns" else -(-rows // 4) * 4
        s = torch.full((groups, padded), float("nan"), device=dev).t()[:rows]
    q = torch.empty(x.shape, dtype=FP8, device=dev)
    K.sgl_per_token_group_quant_fp8(x, q, s, gs, 1e-10, -448.0, 448.0)
    xg = x.double().reshape(rows, groups, gs)
    amax = xg.abs().amax(dim=-1).clamp_min(1e-10)
    torch.testing.assert_close(s.double().cpu(), (amax / 448).cpu(), rtol=1e-6, atol=0)
    assert_fp8(q.reshape(rows, groups, gs), xg * (448 / amax)[..., None])


def test_per_token_group_quant_ue8m0(dev: str, gen: torch.Generator) -> None:
    """Scales rounded up to powers of two; the division by one is exact."""
    x = _x(gen, (9, 256), torch.bfloat16, dev)
    q, s = torch.empty(x.shape, dtype=FP8, device=dev), torch.empty(9, 2, device=dev)
    K.sgl_per_token_group_quant_8bit(x, q, s, 128, 1e-10, -448.0, 448.0, True)
    amax = x.double().view(9, 2, 128).abs().amax(dim=-1).clamp_min(1e-10)
    want = torch.exp2(torch.ceil(torch.log2(amax / 448)))
    assert s.double().cpu().tolist() == want.cpu().tolist()
    assert_fp8(q.view(9, 2, 128), x.double().view(9, 2, 128) / want[..., None])


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("shape", [(1, 4096), (5, 1000), (17, 2112)],
                         ids=lambda s: "x".join(map(str, s)))
def test_per_token_quant(dev: str, gen: torch.Generator, shape: tuple[int, int],
                         dtype: torch.dtype) -> None:
    x = _x(gen, shape, dtype, dev)
    q = torch.empty(shape, dtype=FP8, device=dev)
    s = torch.full((shape[0], 1), float("nan"), device=dev)
    K.sgl_per_token_quant_fp8(x, q, s)
    amax = x.double().abs().amax(dim=1, keepdim=True)
    torch.testing.assert_close(s.double().cpu(), (amax / 448).cpu(), rtol=1e-6, atol=0)
    assert_fp8(q, x.double() * (448 / amax))


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_per_tensor_quant(dev: str, gen: torch.Generator, dtype: torch.dtype) -> None:
    x = _x(gen, (13, 777), dtype, dev)
    amax = x.double().abs().max()
    q, s = torch.empty(x.shape, dtype=FP8, device=dev), torch.zeros(1, device=dev)
    K.sgl_per_tensor_quant_fp8(x, q, s, False)  # dynamic, into sglang's zeroed buffer
    torch.testing.assert_close(s.double().cpu(), (amax / 448).reshape(1).cpu(), rtol=1e-6,
                               atol=0)
    assert_fp8(q, x.double() / s.double())
    big = torch.full((1,), float(amax) / 100, device=dev)  # an atomic max keeps the larger
    K.sgl_per_tensor_quant_fp8(x, q, big, False)
    assert big.item() == pytest.approx(float(amax) / 100)
    assert_fp8(q, x.double() / big.double())
    static = torch.full((1,), 0.01, device=dev)
    K.sgl_per_tensor_quant_fp8(x, q, static, True)
    assert static.item() == pytest.approx(0.01)
    assert_fp8(q, x.double() / static.double())


def test_fp8_ties_round_to_even(dev: str) -> None:
    """Every midpoint between neighbouring e4m3 values, scaled by 1: torch's bits exactly
    (Triton's interpreter on its own rounds these away from zero)."""
    every = torch.arange(256, dtype=torch.uint8).view(FP8).double()
    every = every[torch.isfinite(every)].unique()
    mids = (every[1:] + every[:-1]) / 2
    x = torch.cat([mids, -mids, every]).float().to(dev)
    q, s = torch.empty(x.shape, dtype=FP8, device=dev), torch.ones(1, device=dev)
    K.sgl_per_tensor_quant_fp8(x, q, s, True)
    assert q.cpu().view(torch.uint8).tolist() == x.cpu().to(FP8).view(torch.uint8).tolist()


def test_fp8_zero_input(dev: str) -> None:
    """All zeros quantise to zeros: scale eps/448 per group, 0 per token and per tensor."""
    x = torch.zeros(3, 256, dtype=torch.bfloat16, device=dev)
    q, s = torch.full(x.shape, 1.0, device=dev).to(FP8), torch.empty(3, 2, device=dev)
    K.sgl_per_token_group_quant_fp8(x, q, s, 128, 1e-10, -448.0, 448.0)
    assert (q.float() == 0).all() and torch.allclose(s, torch.full_like(s, 1e-10 / 448))
    q.fill_(1.0)
    s1 = torch.empty(3, 1, device=dev)
    K.sgl_per_token_quant_fp8(x, q, s1)
    assert (q.float() == 0).all() and (s1 == 0).all()
    q.fill_(1.0)
    s0 = torch.zeros(1, device=dev)
    K.sgl_per_tensor_quant_fp8(x, q, s0, False)
    assert (q.float() == 0).all() and s0.item() == 0


def test_fp8_rejects(dev: str) -> None:
    x = torch.zeros(2, 256, dtype=torch.bfloat16, device=dev)
    q, s = torch.empty(x.shape, dtype=FP8, device=dev), torch.empty(2, 2, device=dev)
    with pytest.raises(TypeError, match="float8_e4m3fn"):
        K.sgl_per_token_quant_fp8(x, torch.empty(x.shape, dtype=torch.int8, device=dev), s)
    with pytest.raises(ValueError, match="multiple of group_size"):
        K.sgl_per_token_group_quant_fp8(x, q, s, 100, 1e-10, -448.0, 448.0)
    with pytest.raises(NotImplementedError, match="packed ue8m0"):
        K.sgl_per_token_group_quant_fp8(x, q, s.int(), 128, 1e-10, -448.0, 448.0, True)
    with pytest.raises(NotImplementedError, match="fuse_silu_and_mul"):
        K.sgl_per_token_group_quant_8bit(x, q, s, 128, 1e-10, -448.0, 448.0, False, True)
    with pytest.raises(ValueError, match="-448/448"):
        K.sgl_per_token_group_quant_fp8(x, q, s, 128, 1e-10, -127.0, 127.0)


# ------------------------------------------------------------------ FP8 matmuls


def _ulp(v: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The spacing of ``dtype`` values at each |v| (float64)."""
    mant = {torch.bfloat16: 7, torch.float16: 10, torch.float32: 23}[dtype]
    low = {torch.bfloat16: -126, torch.float16: -14, torch.float32: -126}[dtype]
    e = torch.floor(torch.log2(v.abs().clamp_min(2.0**low)))
    return torch.exp2(e - mant)


def assert_matmul(out: torch.Tensor, ref: torch.Tensor, magnitude: torch.Tensor,
                  dtype: torch.dtype) -> None:
    """``out`` against the float64 ``ref``: within one ``dtype`` step (the rounding; Triton's
    CPU interpreter truncates to bf16/fp16, so one step, not half) plus the fp32
    accumulation bound ``2**-20 * sum|a*b|`` (``magnitude``; on a GPU ``2**-11``, since
    Hopper's FP8 tensor cores accumulate with fewer bits)."""
    assert out.dtype == dtype
    got = out.double().cpu()
    assert torch.isfinite(got).all(), "an element was not written"
    slack = (2.0**-11 if HAS_CUDA else 2.0**-20) * magnitude.cpu()
    err = (got - ref.cpu()).abs()
    bound = _ulp(ref.cpu(), dtype) * 1.0001 + slack
    assert (err <= bound).all(), f"max error {err.max().item():.3g} (bound there " \
        f"{bound.flatten()[err.argmax()].item():.3g})"


def _fp8_operand(gen: torch.Generator, rows: int, cols: int, dev: str) -> torch.Tensor:
    return (torch.randn(rows, cols, generator=gen) * 8).to(FP8).to(dev)


BF16, FP16 = torch.bfloat16, torch.float16
MM_CASES = [  # M, N, K, out dtype, scales (activation-weight), bias
    (1, 64, 128, BF16, "token-channel", True), (7, 200, 272, FP16, "token-channel", False),
    (33, 128, 48, BF16, "tensor-channel", True), (130, 256, 384, FP16, "token-tensor", True),
    (20, 96, 160, FP16, "tensor-tensor", False)]


@pytest.mark.parametrize("case", MM_CASES, ids=lambda c: "m{}-n{}-k{}-{}-{}{}".format(
    *c[:3], str(c[3])[6:], c[4], "-bias" if c[5] else ""))
def test_fp8_scaled_mm(dev: str, gen: torch.Generator,
                       case: tuple[int, int, int, torch.dtype, str, bool]) -> None:
    """sglang's call: the [N, K] weight transposed (column-major), fp32 scales as [M, 1]
    per token (or one per tensor) and [N] per channel (or one), bias of the out dtype."""
    m, n, k, out_dtype, scales, with_bias = case
    a, weight = _fp8_operand(gen, m, k, dev), _fp8_operand(gen, n, k, dev)
    sa = (torch.rand(m if scales.startswith("token") else 1, 1, generator=gen) + 0.05) / 64
    sb = (torch.rand(n if scales.endswith("channel") else 1, generator=gen) + 0.05) / 64
    bias = (torch.randn(n, generator=gen) * 4).to(out_dtype).to(dev) if with_bias else None
    out = K.fp8_scaled_mm(a, weight.t(), sa.to(dev), sb.to(dev), out_dtype, bias)
    ad, wd = a.double().cpu(), weight.double().cpu()
    scale = sa.double().view(-1, 1) * sb.double().view(1, -1)
    ref = (ad @ wd.t()) * scale
    if bias is not None:
        ref += bias.double().cpu()
    assert tuple(out.shape) == (m, n)
    assert_matmul(out, ref, (ad.abs() @ wd.abs().t()) * scale, out_dtype)


def _block_scales(gen: torch.Generator, rows: int, cols: int) -> torch.Tensor:
    return (torch.rand(rows, cols, generator=gen) + 0.05) / 64


BLOCK_CASES = [  # M, N, K, out dtype, layout of the activation scales
    (1, 128, 128, BF16, "columns"), (5, 384, 256, FP16, "tma"), (33, 256, 384, BF16, "rows"),
    (130, 200, 320, FP16, "columns")]


@pytest.mark.parametrize("case", BLOCK_CASES, ids=lambda c: "m{}-n{}-k{}-{}-{}".format(
    *c[:3], str(c[3])[6:], c[4]))
def test_fp8_blockwise_scaled_mm(dev: str, gen: torch.Generator,
                                 case: tuple[int, int, int, torch.dtype, str]) -> None:
    """sglang's call: ``(q, weight.T, x_scale, weight_scale.T)`` with ``x_scale`` [M, K/128]
    column-major (or TMA-padded, or row-major) and the weight's [N/128, K/128] scales."""
    m, n, k, out_dtype, layout = case
    kb, nb = -(-k // 128), -(-n // 128)
    a, weight = _fp8_operand(gen, m, k, dev), _fp8_operand(gen, n, k, dev)
    sa = _block_scales(gen, m, kb)
    if layout == "rows":
        x_scale = sa.to(dev)
    else:
        padded = m if layout == "columns" else -(-m // 4) * 4
        x_scale = torch.full((kb, padded), float("nan"), device=dev).t()[:m]
        x_scale.copy_(sa)
    sw = _block_scales(gen, nb, kb)
    out = K.fp8_blockwise_scaled_mm(a, weight.t(), x_scale, sw.to(dev).t(), out_dtype)
    a_deq = a.double().cpu() * sa.double().repeat_interleave(128, 1)[:, :k]
    w_full = sw.double().repeat_interleave(128, 0).repeat_interleave(128, 1)[:n, :k]
    w_deq = weight.double().cpu() * w_full
    assert tuple(out.shape) == (m, n)
    assert_matmul(out, a_deq @ w_deq.t(), a_deq.abs() @ w_deq.abs().t(), out_dtype)


def test_fp8_blockwise_routes_to_sglangs_triton(gen: torch.Generator,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """On CUDA, with sglang's fp8_kernel imported, its w8a8_block_fp8_matmul_triton gets the
    weight and its scales back as [N, K] and [N/128, K/128] views (no copy), block
    [128, 128] and the out dtype; on CPU, or without that module, ours runs."""
    import types

    from sglang_shims.kernels.ops import fp8_gemm

    calls: list[tuple[object, ...]] = []

    def fake(a: torch.Tensor, b: torch.Tensor, a_s: torch.Tensor, b_s: torch.Tensor,
             block: list[int], output_dtype: torch.dtype) -> torch.Tensor:
        calls.append((a, b, a_s, b_s, block, output_dtype))
        return torch.zeros(a.shape[0], b.shape[0], dtype=output_dtype)

    module = types.ModuleType(fp8_gemm.SGLANG_FP8_KERNEL[1])
    module.w8a8_block_fp8_matmul_triton = fake  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    a, weight = _fp8_operand(gen, 3, 256, "cpu"), _fp8_operand(gen, 128, 256, "cpu")
    x_scale, w_scale = _block_scales(gen, 3, 2), _block_scales(gen, 1, 2)
    monkeypatch.delenv("SGLANG_SHIMS_KERNEL_BACKEND", raising=False)
    monkeypatch.setattr(torch.Tensor, "is_cuda", property(lambda t: True))
    monkeypatch.setattr(fp8_gemm, "use_triton", lambda t: True)
    out = K.fp8_blockwise_scaled_mm(a, weight.t(), x_scale, w_scale.t(), torch.bfloat16)
    assert len(calls) == 1 and out.dtype == torch.bfloat16
    got_a, got_b, got_as, got_bs, block, dtype = calls[0]
    assert got_a is a and got_as is x_scale and block == [128, 128] and dtype == torch.bfloat16
    assert isinstance(got_b, torch.Tensor) and isinstance(got_bs, torch.Tensor)
    assert got_b.data_ptr() == weight.data_ptr() and tuple(got_b.shape) == (128, 256)
    assert got_b.is_contiguous() and tuple(got_bs.shape) == (1, 2)
    assert got_bs.data_ptr() == w_scale.data_ptr()
    launched: list[str] = []
    monkeypatch.setattr(fp8_gemm, "launch_kernel",
                        lambda key, *args, **kwargs: launched.append(key[0]))
    row_major_b = weight.t().contiguous()  # [K, N] row-major: sglang's kernel wants [N, K]
    K.fp8_blockwise_scaled_mm(a, row_major_b, x_scale, w_scale.t(), torch.bfloat16)
    assert len(calls) == 1 and launched == ["fp8_blockwise_scaled_mm"], "not ours"
    monkeypatch.setitem(sys.modules, module.__name__, types.ModuleType(module.__name__))
    monkeypatch.setattr(fp8_gemm, "use_triton", lambda t: False)
    K.fp8_blockwise_scaled_mm(a, weight.t(), x_scale, w_scale.t(), torch.bfloat16)
    assert len(calls) == 1, "sglang's kernel was called on the plain-torch path"


def test_fp8_matmul_rejects(dev: str) -> None:
    a = torch.zeros(4, 128, device=dev).to(FP8)
    w = torch.zeros(256, 128, device=dev).to(FP8)
    s4, s256 = torch.ones(4, device=dev), torch.ones(256, device=dev)
    with pytest.raises(TypeError, match="float8_e4m3fn"):
        K.fp8_scaled_mm(a.float(), w.t(), s4, s256, torch.bfloat16)
    with pytest.raises(ValueError, match="cannot be multiplied"):
        K.fp8_scaled_mm(a, w, s4, s256, torch.bfloat16)
    with pytest.raises(ValueError, match="scales_b must be float32 with 256"):
        K.fp8_scaled_mm(a, w.t(), s4, s4, torch.bfloat16)
    with pytest.raises(ValueError, match="bias must have 256"):
        K.fp8_scaled_mm(a, w.t(), s4, s256, torch.bfloat16, torch.zeros(256, device=dev))
    with pytest.raises(TypeError, match="out_dtype"):
        K.fp8_scaled_mm(a, w.t(), s4, s256, torch.int32)
    with pytest.raises(ValueError, match=r"scales_b must be float32 \[1, 2\]"):
        K.fp8_blockwise_scaled_mm(a, w.t(), torch.ones(4, 1, device=dev),
                                  torch.ones(2, 1, device=dev), torch.bfloat16)


# ------------------------------------------------------------------ moe_fused_gate


def ref_fused_gate(x: list[float], bias: list[float], groups: int, topk_group: int, topk: int,
                   shared: int, factor: float, scale_output: bool
                   ) -> tuple[list[float], list[int]]:
    """One row, in float64 and plain Python, from the rules in _moe_gate's docstring."""
    s = [1 / (1 + math.exp(-v)) for v in x]
    b = [si + bi for si, bi in zip(s, bias, strict=True)]
    per = len(x) // groups
    # the two largest of each group; a group of one adds -FLT_MAX (sgl-kernel's "none")
    score = [sum([*sorted(b[g * per:(g + 1) * per], reverse=True), -FLT_MAX][:2])
             for g in range(groups)]
    kept = sorted(range(groups), key=lambda g: (-score[g], g))[:topk_group]
    candidates = [e for e in range(len(x)) if e // per in kept]
    ids = sorted(candidates, key=lambda e: (-b[e], e))[:topk - shared]
    w = [s[e] for e in ids]
    total = sum(w)
    w += [total / factor] * shared
    ids += [len(x) + i for i in range(shared)]
    out = [v / total * (factor if scale_output else 1.0) for v in w]
    return out, ids


FLT_MAX = float(torch.finfo(torch.float32).max)


GATE_CASES = [  # experts, groups, topk_group, topk, shared
    (256, 8, 4, 8, 0), (256, 8, 4, 9, 1), (128, 4, 2, 6, 2), (64, 8, 3, 4, 0), (16, 16, 4, 2, 0)]


def gate_data(experts: int, groups: int, tokens: int, seed: int
              ) -> tuple[torch.Tensor, torch.Tensor]:
    """Logits whose sigmoids are ``(p + 0.5) / E`` and a bias ``q / E + q * d`` (``p``, ``q``
    permutations, ``d = 1 / (2 E^2)``): every biased score and group score then differs from
    the others by at least ~1e-6, far above fp32's rounding, so the order is the same in
    float64 and in the kernel's fp32.  The first seed from ``seed`` that achieves it."""
    per = experts // groups
    for attempt in range(seed, seed + 50):
        gen = torch.Generator().manual_seed(attempt)
        u = (torch.stack([torch.randperm(experts, generator=gen) for _ in range(tokens)])
             .double() + 0.5) / experts
        q = torch.randperm(experts, generator=gen).double()
        bias = q / experts + q / (2 * experts * experts) - 0.5
        biased = u + bias
        tops = biased.view(tokens, groups, per).topk(min(2, per), dim=-1).values.sum(-1)
        gaps = [biased.sort(dim=-1).values.diff(dim=-1).min().item()]
        if per > 1:
            gaps.append(tops.sort(dim=-1).values.diff(dim=-1).min().item())
        if min(gaps) > 1e-6:
            return torch.log(u / (1 - u)), bias
    raise AssertionError("no well-separated test data found")


@pytest.mark.parametrize("case", GATE_CASES, ids=lambda c: "e{}-g{}-kg{}-k{}-s{}".format(*c))
@pytest.mark.parametrize("scale_output", [False, True], ids=["", "scaled"])
def test_moe_fused_gate(dev: str, case: tuple[int, int, int, int, int],
                        scale_output: bool) -> None:
    """Exact ids and float32 weights against the float64 reference, on data where fp32
    cannot reorder anything (:func:`gate_data`)."""
    experts, groups, topk_group, topk, shared = case
    tokens = 9
    x, bias = gate_data(experts, groups, tokens, experts + topk)
    weights, ids = K.moe_fused_gate(x.float().to(dev), bias.float().to(dev), groups, topk_group,
                                    topk, shared, 2.5, scale_output)
    assert weights.dtype == torch.float32 and ids.dtype == torch.int32
    assert tuple(weights.shape) == tuple(ids.shape) == (tokens, topk)
    for row in range(tokens):
        want_w, want_ids = ref_fused_gate(x[row].tolist(), bias.tolist(), groups, topk_group,
                                          topk, shared, 2.5, scale_output)
        assert ids[row].tolist() == want_ids, f"row {row}"
        torch.testing.assert_close(weights[row].double().cpu(), torch.tensor(want_w).double(),
                                   rtol=2e-6, atol=0)


def test_moe_fused_gate_ties(dev: str) -> None:
    """Equal group scores keep the lower groups; equal experts go in index order; with one
    expert per group every group scores -FLT_MAX (no second value), so the lowest
    ``topk_group`` groups are kept whatever their expert's score, as in sgl-kernel."""
    x = torch.zeros(2, 16, device=dev)
    x[1, 13] = 1.0  # group 3 (of 4) now scores highest, and expert 13 comes first
    weights, ids = K.moe_fused_gate(x, torch.zeros(16, device=dev), 4, 2, 3)
    assert ids.tolist() == [[0, 1, 2], [13, 0, 1]]
    assert weights[0].tolist() == pytest.approx([1 / 3] * 3, rel=1e-6)
    _, ids = K.moe_fused_gate(x, torch.zeros(16, device=dev), 16, 2, 2)
    assert ids.tolist() == [[0, 1], [0, 1]]


def test_moe_fused_gate_rejects() -> None:
    x, b = torch.zeros(2, 16), torch.zeros(16)
    with pytest.raises(ValueError, match="cannot form"):
        K.moe_fused_gate(x, b, 3, 1, 2)
    with pytest.raises(ValueError, match="does not fit"):
        K.moe_fused_gate(x, b, 4, 1, 5)
    with pytest.raises(TypeError, match="same floating dtype"):
        K.moe_fused_gate(x, b.double(), 4, 2, 2)
    with pytest.raises(TypeError, match="newer sgl-kernel's argument order"):
        K.moe_fused_gate(x, b, 4, 2, 2, True, "sigmoid")
    with pytest.raises(NotImplementedError, match="scoring_func='softmax'"):
        K.moe_fused_gate(x, b, 4, 2, 2, scoring_func="softmax")
    with pytest.raises(NotImplementedError, match="bias=None"):
        K.moe_fused_gate(x, None, 4, 2, 2)


def test_kernels_read_only_constexpr_globals() -> None:
    """A module-level value a ``@triton.jit`` function reads must be ``tl.constexpr``: the
    GPU compiler refuses anything else, while Triton's CPU interpreter (where CI runs the
    kernels) lets it through -- the first GPU run of moe_fused_gate's kernel failed so."""
    import ast
    from pathlib import Path

    folder = Path(K.__file__).parent / "ops"
    offenders = []
    for path in sorted(folder.glob("*/triton.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        plain = {t.id for node in tree.body if isinstance(node, ast.Assign | ast.AnnAssign)
                 for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
                 if isinstance(t, ast.Name) and not (
                     isinstance(node.value, ast.Call)
                     and ast.unparse(node.value.func).endswith("constexpr"))}
        for fn in tree.body:
            if isinstance(fn, ast.FunctionDef) and any(
                    ast.unparse(d).endswith("jit") for d in fn.decorator_list):
                read = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)
                        and isinstance(n.ctx, ast.Load)}
                offenders += [f"{path.parent.name}/{path.name}:{fn.name} reads {name}"
                              for name in read & plain]
    assert not offenders, offenders


# ------------------------------------------------------------------ how the ops are served

NEW_OPS = ("moe_align_block_size", "moe_sum", "moe_sum_reduce", "sgl_per_token_group_quant_fp8",
           "sgl_per_token_group_quant_8bit", "sgl_per_token_quant_fp8",
           "sgl_per_tensor_quant_fp8", "fp8_scaled_mm", "fp8_blockwise_scaled_mm",
           "moe_fused_gate")


def test_new_ops_are_served() -> None:
    """The fallback binds them (kernels.OPS) and the hybrid tier routes missing ones to us."""
    from sglang_shims.kernels.serving import hybrid

    for name in NEW_OPS:
        assert K.OPS[name] is getattr(K, name)
        assert K.OPS[name].__module__.startswith("sglang_shims.kernels.ops.")
        assert hybrid.route(name, exported=set()).provider == hybrid.OURS
        assert hybrid.route(name, exported={name}).provider == hybrid.REAL


# ------------------------------------------------------------------ doctor --model-path

QWEN3 = {"model_type": "qwen3", "hidden_act": "silu"}
QWEN3_MOE = {"model_type": "qwen3_moe", "hidden_act": "silu", "num_experts": 128}
DEEPSEEK_V3 = {"model_type": "deepseek_v3", "hidden_act": "silu", "n_routed_experts": 256,
               "n_group": 8, "topk_group": 4, "topk_method": "noaux_tc",
               "scoring_func": "sigmoid",
               "quantization_config": {"quant_method": "fp8", "activation_scheme": "dynamic",
                                       "weight_block_size": [128, 128]}}
FP8_CHANNEL = {"model_type": "llama", "hidden_act": "silu",
               "quantization_config": {"quant_method": "fp8", "activation_scheme": "dynamic"}}
AWQ = {"model_type": "llama", "quantization_config": {"quant_method": "awq", "bits": 4}}
DENSE_OPS = {"rmsnorm", "fused_add_rmsnorm", "apply_rope_with_cos_sin_cache_inplace",
             "silu_and_mul"}


@pytest.mark.parametrize(("config", "extra"), [
    (QWEN3, set()),
    (QWEN3_MOE, {"topk_softmax", "moe_align_block_size", "moe_sum_reduce"}),
    (DEEPSEEK_V3, {"moe_fused_gate", "moe_align_block_size", "moe_sum_reduce",
                   "sgl_per_token_group_quant_fp8", "fp8_blockwise_scaled_mm"}),
    (FP8_CHANNEL, {"sgl_per_token_quant_fp8", "sgl_per_tensor_quant_fp8", "fp8_scaled_mm"}),
    ({"text_config": QWEN3_MOE, "model_type": "vl"},
     {"topk_softmax", "moe_align_block_size", "moe_sum_reduce"}),
], ids=["qwen3", "qwen3-moe", "deepseek-v3-fp8", "fp8-channel", "text-config"])
def test_model_ops(config: dict[str, object], extra: set[str]) -> None:
    """The ops each family reaches, as docs/fallback-ops.md reads them from sglang; all
    provided by the fallback since issue 17."""
    from sglang_shims.kernels.serving.model_ops import ops_for_config

    found = ops_for_config(config)
    assert set(found.ops) == DENSE_OPS | extra
    assert found.missing() == [] and found.unsupported == []


def _doctor_model(tmp_path: pytest.TempPathFactory | object, config: object) -> object:
    import json
    from pathlib import Path

    from sglang_shims.cli.doctor.checks.model_coverage import check_model

    folder = Path(str(tmp_path))
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    (finding,) = check_model(str(folder))
    return finding


def test_doctor_model_ops(tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
    """ok when the fallback has every op; a warning naming the op it lacks, and the
    quantisation methods outside its scope."""
    from sglang_shims import kernels

    ok = _doctor_model(tmp_path, DEEPSEEK_V3)
    assert ok.level == "ok" and "moe_fused_gate" in ok.detail  # type: ignore[attr-defined]
    awq = _doctor_model(tmp_path, AWQ)
    assert awq.level == "warn" and "quantization 'awq'" in awq.detail  # type: ignore[attr-defined]
    monkeypatch.delitem(kernels._WHERE, "fp8_blockwise_scaled_mm")
    lacking = _doctor_model(tmp_path, DEEPSEEK_V3)
    assert lacking.level == "warn"  # type: ignore[attr-defined]
    assert "the fallback lacks fp8_blockwise_scaled_mm" in lacking.detail  # type: ignore[attr-defined]


def test_doctor_model_ops_unreadable(tmp_path: object) -> None:
    """A missing config, a folder named config.json, a file over 1 MiB, a FIFO, a JSON list:
    one warning each, never an exception or a hang."""
    import os
    from pathlib import Path

    from sglang_shims.cli.doctor.checks.model_coverage import check_model

    base = Path(str(tmp_path))
    (base / "dir" / "config.json").mkdir(parents=True)
    (base / "big").mkdir()
    (base / "big" / "config.json").write_text("{" + " " * (1 << 20) + "}", encoding="utf-8")
    (base / "fifo").mkdir()
    os.mkfifo(base / "fifo" / "config.json")  # opening it for reading must not block
    (base / "list").mkdir()
    (base / "list" / "config.json").write_text("[1, 2]", encoding="utf-8")
    for folder in (base / "none", base / "dir" / "config.json", base / "big", base / "fifo",
                   base / "list"):
        (finding,) = check_model(str(folder))
        assert finding.level == "warn" and "could not read" in finding.detail, folder


def test_doctor_cli_model_path(tmp_path: object) -> None:
    """``sglang-shims doctor --no-probe --model-path`` prints the model-ops finding."""
    import json
    import subprocess
    from pathlib import Path

    (Path(str(tmp_path)) / "config.json").write_text(json.dumps(QWEN3_MOE), encoding="utf-8")
    out = subprocess.run([sys.executable, "-m", "sglang_shims", "doctor", "--no-probe",
                          "--json", "--model-path", str(tmp_path)], capture_output=True,
                         text=True, check=False)
    findings = json.loads(out.stdout)["findings"]
    ours = [f for f in findings if f["check"] == "model-ops"]
    assert len(ours) == 1 and ours[0]["level"] == "ok", out.stderr[-2000:]
    assert "topk_softmax" in ours[0]["detail"]


# ------------------------------------------------------------------ the op-set data


@pytest.mark.wheels
@pytest.mark.parametrize("release", ["0.5.1", "0.5.17"])
def test_opset_data_matches_the_wheels(release: str) -> None:
    """The committed op-set data holds what the scanner (tools/regen_moe_fp8_opset.py) reads
    from the wheel today (two releases, ~3 s each: the full rebuild takes a minute and a
    half)."""
    from sglang_shims.kernels.surface import opset
    from sglang_shims.testing import wheels

    from .support.scripts import load_script

    scanner = load_script("tools/regen_moe_fp8_opset.py", "regen_moe_fp8_opset")
    data = opset.load()
    committed = {op: span["entry"] for op, spans in data["ops"].items() for span in spans
                 if release in data["releases"][data["releases"].index(span["first"]):
                                                data["releases"].index(span["last"]) + 1]}
    assert scanner.scan(wheels.unpack("sglang", release) / "sglang") == committed
    # what docs/fallback-ops.md says, read by hand from the two wheels
    align = committed["moe_align_block_size"]["modules"]
    if release == "0.5.1":
        assert committed["moe_align_block_size"]["calls"] == ["8"]
        assert "moe_sum_reduce" not in committed  # its own Triton kernel then
    else:
        assert "kernels.ops.moe.__init__ (kernel registry)" in align
        assert committed["moe_sum_reduce"]["calls"] == ["3"]
