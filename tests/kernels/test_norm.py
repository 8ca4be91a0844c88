"""Correctness of the fallback kernels in ``sglang_shims.kernels`` against float64 math.

Every op is checked against a float64 reference written here in plain torch, on
fresh seeded ``torch.randn`` inputs, with outputs filled with NaN first (so a row the
kernel never writes fails), over shapes that are not multiples of the block sizes.

Two backends per op:

* ``torch``: the plain-PyTorch path (``SGLANG_SHIMS_KERNEL_BACKEND=torch``); always run.
* ``triton``: the Triton kernels, on CUDA when there is a GPU, otherwise on CPU under
  Triton's interpreter (``TRITON_INTERPRET=1``); skipped, with the reason, when
  ``import triton`` fails.  Interpreter shapes are kept small for run time.

Tests marked ``gpu`` need CUDA (large shapes, compiled kernels) and are skipped with
the reason without it.  The whole module is skipped when torch is not installed.  Under
``SGLANG_SHIMS_CI=1`` every skip but "no CUDA GPU" is a failure (tests/support/ci_skips.py).

Tolerances: ``|actual - ref| <= atol + rtol * |ref|``, elementwise, where ``ref`` is the
float64 result from the same (already rounded) inputs.  ``rtol`` is about twice the
worst rounding of one store in that dtype; the kernels compute in fp32, so their
error is that final rounding plus fp32 noise.

| output dtype | rtol          | atol |
|--------------|---------------|------|
| float32      | 1e-5          | 1e-6 |
| float16      | 2**-9 (~2e-3) | 1e-5 |
| bfloat16     | 2**-7 (~8e-3) | 1e-5 |

(Triton 3.8's interpreter rounds fp32 to bf16 toward zero, not to nearest as the GPU
does: up to one bf16 ulp, still inside 2**-7.)

MoE routing weights are float32 (the float32 row).  Expert ids are checked through
their probabilities: the j-th pick's float64 probability must equal the j-th largest
(float32 row), each expert once, so equal probabilities may come in either order
there; ``test_topk_ties`` pins the order (lower index first).

Run time: ~17 s on the 2-core development VM (interpreter); ~55 s on an H200, most of
it Triton compiling each kernel variant once.
"""

from __future__ import annotations

import inspect
import math
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed: the kernel tests need it")

from sglang_shims import kernels as K  # noqa: E402
from sglang_shims.kernels.ops.norm import launch as norm_launch  # noqa: E402

from ._triton import load_triton, select_backend  # noqa: E402

HAS_CUDA = torch.cuda.is_available()
REPO = Path(__file__).resolve().parent.parent


KERNEL_MODULES = ("ops.norm.triton", "ops.activation.triton", "ops.rope.triton",
                  "ops.moe_topk.triton")




NO_TRITON = load_triton(KERNEL_MODULES, HAS_CUDA)
HAS_TRITON = not NO_TRITON
NO_CUDA = "no CUDA GPU: compiled-kernel tests need one"

TOL = {
    torch.float32: (1e-5, 1e-6),
    torch.float16: (2.0**-9, 1e-5),
    torch.bfloat16: (2.0**-7, 1e-5),
}
DTYPES = [torch.bfloat16, torch.float16, torch.float32]
DTYPE_IDS = ["bf16", "fp16", "fp32"]

BACKENDS = [
    "torch",
    pytest.param("triton", marks=pytest.mark.skipif(not HAS_TRITON, reason=NO_TRITON)),
]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Selects the path and yields the device the tensors go to."""
    yield select_backend(request.param, monkeypatch, HAS_CUDA)


@pytest.fixture
def gen() -> torch.Generator:
    return torch.Generator().manual_seed(20251130)


def randn(gen: torch.Generator, *shape: int, dtype: torch.dtype = torch.float32,
          device: str = "cpu", scale: float = 1.0) -> torch.Tensor:
    """Seeded normal values (never all zeros), made on CPU then moved."""
    return (torch.randn(*shape, generator=gen) * scale).to(dtype=dtype, device=device)


def nan_like(t: torch.Tensor) -> torch.Tensor:
    return torch.full_like(t, float("nan"))


def assert_close(actual: torch.Tensor, ref: torch.Tensor, dtype: torch.dtype, what: str) -> None:
    rtol, atol = TOL[dtype]
    a = actual.detach().double().cpu()
    r = ref.detach().double().cpu()
    assert a.shape == r.shape, f"{what}: shape {tuple(a.shape)} != {tuple(r.shape)}"
    assert not torch.isnan(a).any(), f"{what}: NaN in the output (an element was not written)"
    err = (a - r).abs()
    bad = err > atol + rtol * r.abs()
    if bad.any():
        i = int(bad.flatten().nonzero()[0])
        pytest.fail(f"{what}: {int(bad.sum())} of {bad.numel()} elements beyond rtol={rtol} "
                    f"atol={atol}; max error {err.max().item():.3g}; first bad "
                    f"actual={a.flatten()[i].item()!r} ref={r.flatten()[i].item()!r}")


# ---------------------------------------------------------------- float64 references


def ref_rmsnorm(x: torch.Tensor, w: torch.Tensor, eps: float, gemma: bool) -> torch.Tensor:
    xd = x.double()
    wd = w.double() + (1.0 if gemma else 0.0)
    return xd * torch.rsqrt(xd.square().mean(-1, keepdim=True) + eps) * wd


def ref_act(x: torch.Tensor, kind: str) -> torch.Tensor:
    xd = x.double()
    d = xd.shape[-1] // 2
    a, b = xd[..., :d], xd[..., d:]
    if kind == "silu":
        y = a / (1.0 + torch.exp(-a))
    elif kind == "gelu":
        y = 0.5 * a * (1.0 + torch.erf(a / math.sqrt(2.0)))
    else:
        y = 0.5 * a * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (a + 0.044715 * a**3)))
    return y * b


def ref_rope(x: torch.Tensor, pos: torch.Tensor, cache: torch.Tensor, head_size: int,
             neox: bool) -> torch.Tensor:
    """x: [tokens, heads * head_size] -> rotated, float64, same shape."""
    t = x.shape[0]
    xd = x.double().reshape(t, -1, head_size).clone()
    rd = cache.shape[1]
    half = rd // 2
    cs = cache.double()[pos.long().cpu()]
    cos, sin = cs[:, None, :half], cs[:, None, half:]
    if neox:
        x1, x2 = xd[..., :half].clone(), xd[..., half:rd].clone()
        xd[..., :half] = x1 * cos - x2 * sin
        xd[..., half:rd] = x2 * cos + x1 * sin
    else:
        x1, x2 = xd[..., 0:rd:2].clone(), xd[..., 1:rd:2].clone()
        xd[..., 0:rd:2] = x1 * cos - x2 * sin
        xd[..., 1:rd:2] = x2 * cos + x1 * sin
    return xd.reshape(x.shape)


def ref_topk(logits: torch.Tensor, k: int, renormalize: bool, softcap: float = 0.0,
             bias: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    x = logits.double()
    if softcap:
        x = torch.tanh(x / softcap) * softcap
    if bias is not None:
        x = x + bias.double()
    p = torch.softmax(x, dim=-1)
    return p, torch.sort(p, dim=-1, descending=True, stable=True).values[:, :k]


# ---------------------------------------------------------------- norms

NORM_SHAPES = [(1, 4096), (7, 1000), (33, 128 * 3 + 1)]


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("shape", NORM_SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("gemma", [False, True], ids=["rms", "gemma"])
def test_rmsnorm(backend: str, gen: torch.Generator, shape: tuple[int, int],
                 dtype: torch.dtype, gemma: bool) -> None:
    tokens, hidden = shape
    x = randn(gen, tokens, hidden, dtype=dtype, device=backend)
    w = randn(gen, hidden, dtype=dtype, device=backend)
    x_before = x.clone()
    out = nan_like(x)
    fn = K.gemma_rmsnorm if gemma else K.rmsnorm
    ret = fn(x, w, 1e-6, out=out)
    assert ret is out
    assert torch.equal(x, x_before), "rmsnorm must not modify its input"
    assert_close(out, ref_rmsnorm(x, w, 1e-6, gemma), dtype, fn.__name__)
    fresh = fn(x, w, eps=1e-5)  # allocates its output, other eps
    assert fresh.dtype == dtype and fresh.shape == x.shape
    assert_close(fresh, ref_rmsnorm(x, w, 1e-5, gemma), dtype, fn.__name__ + " (out=None)")


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("shape", NORM_SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("gemma", [False, True], ids=["rms", "gemma"])
def test_fused_add_rmsnorm(backend: str, gen: torch.Generator, shape: tuple[int, int],
                           dtype: torch.dtype, gemma: bool) -> None:
    """sgl-kernel's order: residual += input; input = rmsnorm(residual) * w; both in place."""
    tokens, hidden = shape
    x = randn(gen, tokens, hidden, dtype=dtype, device=backend)
    r = randn(gen, tokens, hidden, dtype=dtype, device=backend)
    w = randn(gen, hidden, dtype=dtype, device=backend)
    total = x.double() + r.double()
    fn = K.gemma_fused_add_rmsnorm if gemma else K.fused_add_rmsnorm
    x_ptr, r_ptr = x.data_ptr(), r.data_ptr()
    assert fn(x, r, w, 1e-6) is None
    assert (x.data_ptr(), r.data_ptr()) == (x_ptr, r_ptr)
    assert_close(r, total, dtype, fn.__name__ + " residual (= input + residual)")
    assert_close(x, ref_rmsnorm(total, w, 1e-6, gemma), dtype, fn.__name__ + " input (= norm)")


def test_rmsnorm_layouts(backend: str, gen: torch.Generator) -> None:
    """3-D input, strided rows (a column slice), strided columns (a transpose)."""
    dtype = torch.bfloat16
    w = randn(gen, 96, dtype=dtype, device=backend)
    x3 = randn(gen, 2, 5, 96, dtype=dtype, device=backend)
    assert_close(K.rmsnorm(x3, w), ref_rmsnorm(x3, w, 1e-6, False), dtype, "3-D")
    wide = randn(gen, 9, 200, dtype=dtype, device=backend)
    xs = wide[:, 50:146]  # row stride 200
    out = nan_like(xs)
    K.rmsnorm(xs, w, out=out)
    assert_close(out, ref_rmsnorm(xs, w, 1e-6, False), dtype, "strided rows")
    # In place on strided rows: residual and input are both views into bigger tensors.
    wide_r = randn(gen, 9, 300, dtype=dtype, device=backend)
    rs = wide_r[:, 100:196]
    total = xs.double() + rs.double()
    untouched = wide_r[:, :100].clone()
    K.fused_add_rmsnorm(xs, rs, w)
    assert_close(rs, total, dtype, "strided residual")
    assert_close(xs, ref_rmsnorm(total, w, 1e-6, False), dtype, "strided input")
    assert torch.equal(wide_r[:, :100], untouched), "wrote outside the residual view"
    xt = randn(gen, 96, 6, dtype=dtype, device=backend).t()  # column stride 6
    rt = randn(gen, 96, 6, dtype=dtype, device=backend).t()
    total = xt.double() + rt.double()
    K.gemma_fused_add_rmsnorm(xt, rt, w)
    assert_close(rt, total, dtype, "transposed residual")
    assert_close(xt, ref_rmsnorm(total, w, 1e-6, True), dtype, "transposed input")


def test_rmsnorm_two_pass(backend: str, gen: torch.Generator,
                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows wider than the one-pass limit (lowered here) take the looped kernel."""
    monkeypatch.setattr(norm_launch, "MAX_SINGLE_PASS", 256)
    monkeypatch.setattr(norm_launch, "LOOP_BLOCK", 128)
    dtype = torch.float16
    x = randn(gen, 3, 1000, dtype=dtype, device=backend)
    r = randn(gen, 3, 1000, dtype=dtype, device=backend)
    w = randn(gen, 1000, dtype=dtype, device=backend)
    assert_close(K.rmsnorm(x, w), ref_rmsnorm(x, w, 1e-6, False), dtype, "two-pass rmsnorm")
    total = x.double() + r.double()
    K.gemma_fused_add_rmsnorm(x, r, w)
    assert_close(r, total, dtype, "two-pass residual")
    # The looped kernel normalises the residual as stored (rounded): compare to that.
    assert_close(x, ref_rmsnorm(r, w, 1e-6, True), dtype, "two-pass fused norm")



@pytest.mark.parametrize("single_pass_limit", [8192, 256], ids=["one-pass", "two-pass"])
def test_rmsnorm_eps_counts(backend: str, gen: torch.Generator, single_pass_limit: int,
                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Inputs so small that eps is most of mean(x^2): a kernel that drops or misplaces eps
    is off by far more than the tolerance (at unit scale eps is below it)."""
    monkeypatch.setattr(norm_launch, "MAX_SINGLE_PASS", single_pass_limit)
    monkeypatch.setattr(norm_launch, "LOOP_BLOCK", 128)
    x = randn(gen, 3, 1000, device=backend, scale=1e-3)  # mean(x^2) ~ 1e-6 ~ eps
    w = randn(gen, 1000, device=backend)
    for eps in (1e-6, 1e-5):
        assert_close(K.rmsnorm(x, w, eps=eps), ref_rmsnorm(x, w, eps, False), torch.float32,
                     f"rmsnorm eps={eps}")


def test_gemma_weight_precision(backend: str, gen: torch.Generator) -> None:
    """(1 + w) is formed in fp32 from a bf16 weight, never rounded to bf16.

    Gemma weights are small, so 1 + w rounded to bf16 keeps only ~2 of w's bits.  With
    fp32 activations the difference is plain; with bf16 activations it still shows in
    the mean error.
    """
    hidden = 1024
    w = randn(gen, hidden, dtype=torch.bfloat16, device=backend, scale=0.02)
    exact = w.double() + 1.0
    rounded = (w + 1.0).double()  # bf16 + 1 stays bf16: the rounding we must not do
    assert (exact - rounded).abs().max() > 1e-3, "test premise: bf16 rounding of 1 + w is visible"

    x32 = randn(gen, 16, hidden, device=backend)
    out = K.gemma_rmsnorm(x32, w)
    base = ref_rmsnorm(x32, torch.ones(hidden, dtype=torch.float64, device=backend), 1e-6,
                       False)
    err_ours = ((out.double() - base * exact) / (base * exact)).abs().max().item()
    err_rounded = ((base * rounded - base * exact) / (base * exact)).abs().max().item()
    assert err_ours < 1e-5 < err_rounded, (err_ours, err_rounded)

    # bf16 activations: the output's own rounding now dominates, but the weight's shows in
    # the mean.  The comparison runs the same kernel with a weight w' chosen so that
    # fp32(1 + w') == bf16(1 + w), so both sides round their output the same way.
    xb = randn(gen, 64, hidden, dtype=torch.bfloat16, device=backend)
    base = ref_rmsnorm(xb, torch.ones(hidden, dtype=torch.float64, device=backend), 1e-6,
                       False)
    mean_ours = ((K.gemma_rmsnorm(xb, w).double() - base * exact) / (base * exact))
    w_rounded = (w + 1.0).float() - 1.0
    mean_rounded = ((K.gemma_rmsnorm(xb, w_rounded).double() - base * exact) / (base * exact))
    assert mean_ours.abs().mean() < 0.95 * mean_rounded.abs().mean(), (
        mean_ours.abs().mean().item(), mean_rounded.abs().mean().item())


def test_norm_rejects_bad_shapes(gen: torch.Generator) -> None:
    x = randn(gen, 2, 8)
    with pytest.raises(ValueError, match="weight"):
        K.rmsnorm(x, randn(gen, 7))
    with pytest.raises(ValueError, match="residual"):
        K.fused_add_rmsnorm(x, randn(gen, 3, 8), randn(gen, 8))
    with pytest.raises(ValueError, match="out shape"):
        K.rmsnorm(x, randn(gen, 8), out=randn(gen, 2, 9))


# ---------------------------------------------------------------- activations

ACTS: list[tuple[str, Callable[..., torch.Tensor]]] = [
    ("silu", K.silu_and_mul), ("gelu", K.gelu_and_mul), ("gelu_tanh", K.gelu_tanh_and_mul)]


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("shape", [(1, 4096), (7, 1000), (33, 128 * 3 + 1)],
                         ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("act", ACTS, ids=[a[0] for a in ACTS])
def test_act_and_mul(backend: str, gen: torch.Generator, shape: tuple[int, int],
                     dtype: torch.dtype, act: tuple[str, Callable[..., torch.Tensor]]) -> None:
    kind, fn = act
    tokens, d = shape
    x = randn(gen, tokens, 2 * d, dtype=dtype, device=backend, scale=2.0)
    x_before = x.clone()
    out = torch.full((tokens, d), float("nan"), dtype=dtype, device=backend)
    assert fn(x, out) is out
    assert torch.equal(x, x_before)
    assert_close(out, ref_act(x, kind), dtype, fn.__name__)
    fresh = fn(x)
    assert fresh.dtype == dtype and fresh.shape == (tokens, d)
    assert_close(fresh, ref_act(x, kind), dtype, fn.__name__ + " (out=None)")


def test_act_layouts(backend: str, gen: torch.Generator) -> None:
    dtype = torch.float16
    x3 = randn(gen, 2, 3, 2 * 100, dtype=dtype, device=backend)
    out3 = K.silu_and_mul(x3)
    assert out3.shape == (2, 3, 100)
    assert_close(out3, ref_act(x3, "silu"), dtype, "3-D")
    wide = randn(gen, 5, 300, dtype=dtype, device=backend)
    xs = wide[:, 10:210]  # strided rows
    out = nan_like(wide)[:, :100]  # strided output rows too
    K.gelu_and_mul(xs, out=out)
    assert_close(out, ref_act(xs, "gelu"), dtype, "strided rows")
    with pytest.raises(ValueError, match="out shape"):
        K.silu_and_mul(x3, out=torch.empty(2, 3, 99, dtype=dtype, device=backend))
    with pytest.raises(ValueError, match="even"):
        K.silu_and_mul(randn(gen, 2, 7, dtype=dtype, device=backend))


# ---------------------------------------------------------------- rotary embedding

ROPE_CASES = [  # tokens, q heads, k heads, head_size, rotary_dim
    (1, 4, 2, 128, 128),
    (7, 3, 1, 64, 32),  # partial rotary
    (33, 2, 2, 80, 48),  # non-power-of-two head and rotary sizes
    (3, 40, 5, 128, 96),  # heads split over two programs per token
]


def _rope_inputs(gen: torch.Generator, device: str, dtype: torch.dtype, tokens: int, nq: int,
                 nk: int, head: int, rd: int, max_pos: int = 300,
                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    # The same layout as sglang: q and k are column slices of one qkv tensor.
    qkv = randn(gen, tokens, (nq + 2 * nk) * head, dtype=dtype, device=device)
    q, k = qkv[:, : nq * head], qkv[:, nq * head: (nq + nk) * head]
    angles = torch.rand(max_pos, rd // 2, generator=gen, dtype=torch.float64) * 2 * math.pi
    cache = torch.cat((angles.cos(), angles.sin()), dim=-1).float().to(device)
    pos = torch.randint(0, max_pos, (tokens,), generator=gen).to(device)
    return q, k, cache, pos


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("case", ROPE_CASES, ids=lambda c: "t{}-q{}-k{}-d{}-r{}".format(*c))
@pytest.mark.parametrize("neox", [True, False], ids=["neox", "gptj"])
def test_rope(backend: str, gen: torch.Generator, case: tuple[int, int, int, int, int],
              dtype: torch.dtype, neox: bool) -> None:
    tokens, nq, nk, head, rd = case
    q, k, cache, pos = _rope_inputs(gen, backend, dtype, tokens, nq, nk, head, rd)
    ref_q, ref_k = ref_rope(q, pos, cache, head, neox), ref_rope(k, pos, cache, head, neox)
    q_before, k_before = q.clone(), k.clone()
    ret = K.apply_rope_with_cos_sin_cache_inplace(pos, q, k, head, cache, is_neox=neox)
    assert ret is None
    assert_close(q, ref_q, dtype, "query")
    assert_close(k, ref_k, dtype, "key")
    if rd < head:  # the unrotated tail of each head is untouched, bit for bit
        tail = (slice(None), slice(None), slice(rd, None))
        assert torch.equal(q.view(tokens, nq, head)[tail], q_before.view(tokens, nq, head)[tail])
        assert torch.equal(k.view(tokens, nk, head)[tail], k_before.view(tokens, nk, head)[tail])


def test_rope_positions_int32_and_3d(backend: str, gen: torch.Generator) -> None:
    q, k, cache, pos = _rope_inputs(gen, backend, torch.bfloat16, 5, 2, 1, 64, 64)
    ref_q, ref_k = ref_rope(q, pos, cache, 64, True), ref_rope(k, pos, cache, 64, True)
    q3, k3 = q.clone().view(5, 2, 64), k.clone().view(5, 1, 64)
    K.apply_rope_with_cos_sin_cache_inplace(pos.int(), q3, k3, 64, cache)
    assert_close(q3.reshape(5, -1), ref_q, torch.bfloat16, "query")
    assert_close(k3.reshape(5, -1), ref_k, torch.bfloat16, "key")


@pytest.mark.parametrize("neox", [True, False], ids=["neox", "gptj"])
def test_rope_out_of_place(backend: str, gen: torch.Generator, neox: bool) -> None:
    """The op-level form (sgl-kernel's apply_rope_pos_ids_cos_sin_cache) with separate
    outputs: inputs unchanged, the unrotated tail copied into the outputs."""
    from sglang_shims.kernels.ops.rope import rope_into

    dtype = torch.bfloat16
    q, k, cache, pos = _rope_inputs(gen, backend, dtype, 4, 3, 1, 64, 32)
    q3, k3 = q.view(4, 3, 64), k.view(4, 1, 64)
    q_before, k_before = q3.clone(), k3.clone()
    q_out, k_out = nan_like(q3), nan_like(k3)
    rope_into(q3, k3, q_out, k_out, cache, pos, not neox)
    assert torch.equal(q3, q_before) and torch.equal(k3, k_before)
    assert_close(q_out.reshape(4, -1), ref_rope(q, pos, cache, 64, neox), dtype, "q_rope")
    assert_close(k_out.reshape(4, -1), ref_rope(k, pos, cache, 64, neox), dtype, "k_rope")


@pytest.mark.parametrize("neox", [True, False], ids=["neox", "gptj"])
def test_rope_fused_set_kv_buffer(backend: str, gen: torch.Generator, neox: bool) -> None:
    dtype = torch.float16
    tokens, nq, nk, head, rd, slots = 6, 2, 2, 64, 32, 20
    q, k, cache, pos = _rope_inputs(gen, backend, dtype, tokens, nq, nk, head, rd)
    v = randn(gen, tokens, nk * head, dtype=dtype, device=backend)
    k_buf = torch.full((slots, nk * head), float("nan"), dtype=dtype, device=backend)
    v_buf = torch.full((slots, nk * head), float("nan"), dtype=dtype, device=backend)
    loc = torch.randperm(slots, generator=gen)[:tokens].to(backend)
    ref_k = ref_rope(k, pos, cache, head, neox)
    arg = K.FusedSetKVBufferArg(value=v, k_buffer=k_buf, v_buffer=v_buf, k_scale=None,
                                v_scale=None, cache_loc=loc)
    K.apply_rope_with_cos_sin_cache_inplace(pos, q, k, head, cache, neox, arg)
    assert_close(k, ref_k, dtype, "key")
    assert_close(k_buf[loc], ref_k, dtype, "k_buffer rows at cache_loc")
    assert torch.equal(v_buf[loc], v), "v_buffer rows at cache_loc must equal value"
    others = torch.ones(slots, dtype=torch.bool, device=backend)
    others[loc] = False
    assert torch.isnan(k_buf[others]).all() and torch.isnan(v_buf[others]).all(), \
        "wrote KV rows outside cache_loc"


def test_rope_rejects(gen: torch.Generator) -> None:
    q, k, cache, pos = _rope_inputs(gen, "cpu", torch.float32, 2, 1, 1, 64, 64)
    with pytest.raises(ValueError, match="float32"):
        K.apply_rope_with_cos_sin_cache_inplace(pos, q, k, 64, cache.double())
    v = randn(gen, 2, 64)
    arg = K.FusedSetKVBufferArg(v, torch.empty(4, 64), torch.empty(4, 64), 0.5, None,
                                torch.arange(2))
    with pytest.raises(NotImplementedError, match="k_scale"):
        K.apply_rope_with_cos_sin_cache_inplace(pos, q, k, 64, cache, True, arg)
    arg = K.FusedSetKVBufferArg(v, torch.empty(4, 64), torch.empty(4, 64), None, None,
                                torch.arange(2, dtype=torch.int32))
    with pytest.raises(ValueError, match="int64"):
        K.apply_rope_with_cos_sin_cache_inplace(pos, q, k, 64, cache, True, arg)
    with pytest.raises(ValueError, match="rotary_dim"):
        K.apply_rope_with_cos_sin_cache_inplace(pos, q, k, 32, cache)


# ---------------------------------------------------------------- MoE routing


def _check_topk(w: torch.Tensor, ids: torch.Tensor, p: torch.Tensor, ref_w: torch.Tensor,
                renormalize: bool) -> None:
    k = ref_w.shape[1]
    expect = ref_w / ref_w.sum(-1, keepdim=True) if renormalize else ref_w
    assert w.dtype == torch.float32
    assert_close(w, expect, torch.float32, "topk_weights")
    ids_c = ids.long().cpu()
    assert ((ids_c >= 0) & (ids_c < p.shape[1])).all(), "expert id out of range"
    assert all(len(set(row.tolist())) == k for row in ids_c), "an expert was picked twice"
    picked = p.gather(1, ids_c)  # each pick's probability must be the k-th largest
    assert_close(picked, ref_w, torch.float32, "probabilities of the picked experts")


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize(("tokens", "experts", "k"), [(1, 128, 8), (7, 60, 2), (33, 8, 1)],
                         ids=["t1-e128-k8", "t7-e60-k2", "t33-e8-k1"])
@pytest.mark.parametrize("renormalize", [False, True], ids=["plain", "renorm"])
def test_topk_softmax(backend: str, gen: torch.Generator, dtype: torch.dtype, tokens: int,
                      experts: int, k: int, renormalize: bool) -> None:
    logits = randn(gen, tokens, experts, dtype=dtype, device=backend, scale=2.0)
    w = torch.full((tokens, k), float("nan"), device=backend)
    ids = torch.full((tokens, k), -1, dtype=torch.int32, device=backend)
    assert K.topk_softmax(w, ids, logits, renormalize) is None
    assert ids.dtype == torch.int32
    p, ref_w = ref_topk(logits.cpu(), k, renormalize)
    _check_topk(w, ids, p, ref_w, renormalize)


def test_topk_softmax_softcap_and_bias(backend: str, gen: torch.Generator) -> None:
    """sgl-kernel 0.3.18's extra arguments: tanh soft-capping, then a per-expert bias."""
    tokens, experts, k = 9, 64, 6
    logits = randn(gen, tokens, experts, dtype=torch.bfloat16, device=backend, scale=20.0)
    bias = randn(gen, experts, device=backend, scale=0.5)
    w = torch.full((tokens, k), float("nan"), device=backend)
    ids = torch.full((tokens, k), -1, dtype=torch.int32, device=backend)
    K.topk_softmax(w, ids, logits, renormalize=True, moe_softcapping=30.0,
                   correction_bias=bias)
    p, ref_w = ref_topk(logits.cpu(), k, True, softcap=30.0, bias=bias.cpu())
    _check_topk(w, ids, p, ref_w, True)
    with pytest.raises(ValueError, match="correction_bias"):
        K.topk_softmax(w, ids, logits, True, 0.0, bias.half())


def test_topk_softmax_legacy_form(backend: str, gen: torch.Generator) -> None:
    """Early sgl-kernel: (weights, ids, token_expert_indices, gating_output)."""
    tokens, experts, k = 5, 16, 3
    logits = randn(gen, tokens, experts, device=backend)
    w = torch.full((tokens, k), float("nan"), device=backend)
    ids = torch.full((tokens, k), -1, dtype=torch.int32, device=backend)
    tei = torch.full((tokens, k), -1, dtype=torch.int32, device=backend)
    K.topk_softmax(w, ids, tei, logits)
    p, ref_w = ref_topk(logits.cpu(), k, False)
    _check_topk(w, ids, p, ref_w, False)
    expect = torch.arange(k)[None, :] * tokens + torch.arange(tokens)[:, None]
    assert torch.equal(tei.long().cpu(), expect)


def test_topk_ties(backend: str) -> None:
    """Equal probabilities: lower expert index first (sgl-kernel's rule)."""
    logits = torch.full((3, 16), 0.5, device=backend)
    logits[1, [3, 9, 12]] = 2.0  # a three-way tie at the top, then 13 equal ones
    w = torch.full((3, 4), float("nan"), device=backend)
    ids = torch.full((3, 4), -1, dtype=torch.int32, device=backend)
    K.topk_softmax(w, ids, logits, False)
    assert ids[0].tolist() == [0, 1, 2, 3]
    assert ids[1].tolist() == [3, 9, 12, 0]
    assert torch.allclose(w[0].cpu(), torch.full((4,), 1 / 16))


def test_topk_rejects(gen: torch.Generator) -> None:
    w = torch.empty(2, 3)
    ids = torch.empty(2, 3, dtype=torch.int32)
    with pytest.raises(TypeError, match="gating_output"):
        K.topk_softmax(w, ids, torch.zeros(2, 8, dtype=torch.float64))
    with pytest.raises(ValueError, match="less than or equal"):
        K.topk_softmax(w, ids, randn(gen, 2, 2))
    with pytest.raises(TypeError, match="topk_ids"):
        K.topk_softmax(w, ids.short(), randn(gen, 2, 8))
    K.topk_softmax(torch.empty(0, 3), torch.empty(0, 3, dtype=torch.int32), randn(gen, 0, 8))


# ---------------------------------------------------------------- API surface

#: Python signatures of the sgl-kernel functions (sgl-kernel 0.3.18), as
#: (name, default) pairs; inspect.Parameter.empty for required ones.
E = inspect.Parameter.empty
SGL_SIGNATURES: dict[str, list[tuple[str, object]]] = {
    "rmsnorm": [("input", E), ("weight", E), ("eps", 1e-6), ("out", None),
                ("enable_pdl", None)],
    "fused_add_rmsnorm": [("input", E), ("residual", E), ("weight", E), ("eps", 1e-6),
                          ("enable_pdl", None)],
    "gemma_rmsnorm": [("input", E), ("weight", E), ("eps", 1e-6), ("out", None),
                      ("enable_pdl", None)],
    "gemma_fused_add_rmsnorm": [("input", E), ("residual", E), ("weight", E), ("eps", 1e-6),
                                ("enable_pdl", None)],
    "silu_and_mul": [("input", E), ("out", None)],
    "gelu_and_mul": [("input", E), ("out", None)],
    "gelu_tanh_and_mul": [("input", E), ("out", None)],
    "apply_rope_with_cos_sin_cache_inplace": [
        ("positions", E), ("query", E), ("key", E), ("head_size", E), ("cos_sin_cache", E),
        ("is_neox", True), ("fused_set_kv_buffer_arg", None), ("enable_pdl", None)],
    "topk_softmax": [("topk_weights", E), ("topk_ids", E), ("gating_output", E),
                     ("renormalize", False), ("moe_softcapping", 0.0),
                     ("correction_bias", None)],
    # issue 17 (tests/test_kernels_moe_fp8.py); the last moe_align_block_size parameter is
    # the ninth argument sglang 0.5.17 passes positionally (not in sgl-kernel 0.3.18)
    "moe_align_block_size": [("topk_ids", E), ("num_experts", E), ("block_size", E),
                             ("sorted_token_ids", E), ("experts_ids", E),
                             ("num_tokens_post_pad", E), ("cumsum_buffer", E),
                             ("pad_sorted_token_ids", False),
                             ("ignore_invalid_experts", False)],
    "moe_sum_reduce": [("input_tensor", E), ("output_tensor", E),
                       ("routed_scaling_factor", 0)],
    "moe_sum": [("input_tensor", E), ("output_tensor", E)],
    **{name: [("input", E), ("output_q", E), ("output_s", E), ("group_size", E), ("eps", E),
              ("fp8_min", E), ("fp8_max", E), ("scale_ue8m0", False),
              ("fuse_silu_and_mul", False), ("masked_m", None), ("enable_v2", None)]
       for name in ("sgl_per_token_group_quant_8bit", "sgl_per_token_group_quant_fp8")},
    "sgl_per_token_quant_fp8": [("input", E), ("output_q", E), ("output_s", E)],
    "sgl_per_tensor_quant_fp8": [("input", E), ("output_q", E), ("output_s", E),
                                 ("is_static", E)],
    "fp8_scaled_mm": [("mat_a", E), ("mat_b", E), ("scales_a", E), ("scales_b", E),
                      ("out_dtype", E), ("bias", None)],
    "fp8_blockwise_scaled_mm": [("mat_a", E), ("mat_b", E), ("scales_a", E), ("scales_b", E),
                                ("out_dtype", E)],
    # sgl-kernel 0.3.x's order; the two keywords newer kernels take (sglang 0.5.16+ passes
    # them by name) come last, keyword-only
    "moe_fused_gate": [("input_tensor", E), ("bias", E), ("num_expert_group", E),
                       ("topk_group", E), ("topk", E), ("num_fused_shared_experts", 0),
                       ("routed_scaling_factor", 0),
                       ("apply_routed_scaling_factor_on_output", False),
                       ("renormalize", True), ("scoring_func", "sigmoid")],
}


def test_ops_registry_matches_sgl_kernel_signatures() -> None:
    assert set(K.OPS) == set(SGL_SIGNATURES)
    for name, params in SGL_SIGNATURES.items():
        fn = K.OPS[name]
        assert fn is getattr(K, name)
        got = [(p.name, p.default) for p in inspect.signature(fn).parameters.values()]
        assert got == params, name


def test_import_is_lazy() -> None:
    """Importing the package (and reading OPS's keys) imports neither torch nor triton."""
    code = ("import sys, sglang_shims.kernels as k; list(k.OPS); "
            "print('torch' in sys.modules, 'triton' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=REPO).stdout.split()
    assert out == ["False", "False"]


@pytest.mark.skipif(not HAS_TRITON, reason=NO_TRITON)
def test_triton_imported_only_on_first_kernel_use() -> None:
    looked_up = ("import sys, torch, sglang_shims.kernels as k; k.OPS['rmsnorm']; "
                 "print('triton' in sys.modules)")
    ran = ("import os, sys, torch; os.environ['TRITON_INTERPRET'] = '1'; "
           "import sglang_shims.kernels as k; k.rmsnorm(torch.randn(2, 16), torch.randn(16)); "
           "print('triton' in sys.modules)")
    outs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True, cwd=REPO).stdout.split() for code in (looked_up, ran)]
    assert outs == [["False"], ["True"]]


def test_torch_path_without_triton(gen: torch.Generator, monkeypatch: pytest.MonkeyPatch) -> None:
    """When ``import triton`` fails the ops still work, through plain torch."""
    from sglang_shims.kernels import runtime

    monkeypatch.setattr(runtime, "triton_available", lambda: False)
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.delenv("SGLANG_SHIMS_KERNEL_BACKEND", raising=False)
    x = randn(gen, 3, 64)
    w = randn(gen, 64)
    assert not runtime.use_triton(x)
    assert_close(K.rmsnorm(x, w), ref_rmsnorm(x, w, 1e-6, False), torch.float32, "rmsnorm")


# ---------------------------------------------------------------- torch.ops registration


def test_schema_strings_parse() -> None:
    from sglang_shims.kernels.standin.torch_ops import SCHEMAS

    assert set(SCHEMAS) == {"0.3.5", "0.3.18"}
    for table in SCHEMAS.values():
        for name, schema in table.items():
            parsed = torch._C.parse_schema(f"sgl_kernel::{schema}")
            assert parsed.name == f"sgl_kernel::{name}"
    rope = torch._C.parse_schema("x::" + SCHEMAS["0.3.18"]["apply_rope_pos_ids_cos_sin_cache"])
    assert [a.name for a in rope.arguments][7] == "enable_pdl"


def test_register_torch_ops(gen: torch.Generator, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SGLANG_SHIMS_KERNEL_BACKEND", "torch")
    ns = "sglang_shims_kernels_test"
    first = K.register_torch_ops(ns)
    assert set(first.values()) == {"defined"}, first
    assert set(K.register_torch_ops(ns).values()) == {"ours"}, "second call must be a no-op"
    ops = getattr(torch.ops, ns)
    x = randn(gen, 4, 32)
    r = randn(gen, 4, 32)
    w = randn(gen, 32)
    out = nan_like(x)
    ops.rmsnorm(out, x, w, 1e-6, False)
    assert_close(out, ref_rmsnorm(x, w, 1e-6, False), torch.float32, "torch.ops rmsnorm")
    total = x.double() + r.double()
    ops.gemma_fused_add_rmsnorm(x, r, w, 1e-6, False)
    assert_close(x, ref_rmsnorm(total, w, 1e-6, True), torch.float32, "torch.ops gemma fused")
    act_in = randn(gen, 3, 20)
    act_out = torch.full((3, 10), float("nan"))
    ops.gelu_tanh_and_mul(act_out, act_in)
    assert_close(act_out, ref_act(act_in, "gelu_tanh"), torch.float32, "torch.ops gelu_tanh")
    q, k, cache, pos = _rope_inputs(gen, "cpu", torch.float32, 3, 2, 1, 32, 32)
    ref_q = ref_rope(q, pos, cache, 32, False)
    q3, k3 = q.view(3, 2, 32), k.view(3, 1, 32)
    ops.apply_rope_pos_ids_cos_sin_cache(q3, k3, q3, k3, cache, pos, True, False,
                                         None, None, None, None)
    assert_close(q, ref_q, torch.float32, "torch.ops rope")
    logits = randn(gen, 4, 16)
    tw = torch.full((4, 2), float("nan"))
    ti = torch.full((4, 2), -1, dtype=torch.int32)
    ops.topk_softmax(tw, ti, logits, True, 0.0, None)
    p, ref_w = ref_topk(logits, 2, True)
    _check_topk(tw, ti, p, ref_w, True)


def test_register_torch_ops_leaves_existing_ops(monkeypatch: pytest.MonkeyPatch) -> None:
    ns = "sglang_shims_kernels_test_existing"
    lib = torch.library.Library(ns, "DEF")
    lib.define("rmsnorm(Tensor! output, Tensor input, Tensor weight, float eps, "
               "bool enable_pdl) -> ()")

    def theirs(output: torch.Tensor, input: torch.Tensor, weight: torch.Tensor, eps: float,
               enable_pdl: bool) -> None:
        output.fill_(7.0)

    lib.impl("rmsnorm", theirs, "CPU")
    lib.define("silu_and_mul(Tensor! out, Tensor input, int extra) -> ()")
    lib.define("gelu_and_mul(Tensor! out, Tensor input) -> ()")  # schema only, no kernels
    result = K.register_torch_ops(ns, dispatch_keys=("CPU",))
    assert result["rmsnorm"] == "exists"
    assert result["silu_and_mul"] == "exists-other-schema"
    assert result["gelu_and_mul"] == "kernels-added:CPU"
    assert result["topk_softmax"] == "defined"
    out = torch.zeros(2, 4)
    getattr(torch.ops, ns).rmsnorm(out, torch.ones(2, 4), torch.ones(4), 1e-6, False)
    assert (out == 7.0).all(), "an existing kernel must not be replaced"
    x = torch.randn(2, 8)
    y = torch.empty(2, 4)
    getattr(torch.ops, ns).gelu_and_mul(y, x)
    assert_close(y, ref_act(x, "gelu"), torch.float32, "added kernel")
    with pytest.raises(ValueError, match="schema_version"):
        K.register_torch_ops(ns, schema_version="9.9")
    del lib


# ---------------------------------------------------------------- GPU-only, large shapes


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_CUDA, reason=NO_CUDA)
@pytest.mark.skipif(not HAS_TRITON, reason=NO_TRITON)
@pytest.mark.parametrize("hidden", [4096, 8192, 5120, 40000])
def test_gpu_large_norms(gen: torch.Generator, hidden: int) -> None:
    dtype = torch.bfloat16
    x = randn(gen, 1024, hidden, dtype=dtype, device="cuda")
    r = randn(gen, 1024, hidden, dtype=dtype, device="cuda")
    w = randn(gen, hidden, dtype=dtype, device="cuda")
    assert_close(K.rmsnorm(x, w), ref_rmsnorm(x, w, 1e-6, False), dtype, "rmsnorm")
    total = x.double() + r.double()
    K.fused_add_rmsnorm(x, r, w)
    assert_close(r, total, dtype, "residual")
    # Above the one-pass limit the looped kernel normalises the stored (rounded) residual.
    norm_of = total if hidden <= norm_launch.MAX_SINGLE_PASS else r
    assert_close(x, ref_rmsnorm(norm_of, w, 1e-6, False), dtype, "fused norm")


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_CUDA, reason=NO_CUDA)
@pytest.mark.skipif(not HAS_TRITON, reason=NO_TRITON)
def test_gpu_large_act_rope_topk(gen: torch.Generator) -> None:
    dtype = torch.bfloat16
    x = randn(gen, 4096, 2 * 14336, dtype=dtype, device="cuda")
    assert_close(K.silu_and_mul(x), ref_act(x, "silu"), dtype, "silu_and_mul")
    for neox in (True, False):
        q, k, cache, pos = _rope_inputs(gen, "cuda", dtype, 4096, 32, 8, 128, 128, 8192)
        rq, rk = ref_rope(q, pos, cache, 128, neox), ref_rope(k, pos, cache, 128, neox)
        K.apply_rope_with_cos_sin_cache_inplace(pos, q, k, 128, cache, neox)
        assert_close(q, rq, dtype, "query")
        assert_close(k, rk, dtype, "key")
    logits = randn(gen, 16384, 128, dtype=dtype, device="cuda")
    w = torch.full((16384, 8), float("nan"), device="cuda")
    ids = torch.full((16384, 8), -1, dtype=torch.int32, device="cuda")
    K.topk_softmax(w, ids, logits, True)
    p, ref_w = ref_topk(logits.cpu(), 8, True)
    _check_topk(w.cpu(), ids.cpu(), p, ref_w, True)
