"""RMSNorm, its residual-add form and Gemma's (``kernels.ops.norm``) against float64.

The one-pass and the looped (two-pass) kernel, 3-D and strided layouts, eps where it
counts, and Gemma's ``1 + w`` formed in fp32; shapes that are not multiples of the block
sizes.  Interpreter shapes are small; ``test_gpu_large_norms`` takes large ones compiled.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed: the kernel tests need it")

from sglang_shims import kernels as K
from sglang_shims.kernels.ops.norm import launch as norm_launch

from ..support.kernels import gpu_only, triton_skip
from ..support.references import DTYPE_IDS, DTYPES, assert_close, nan_like, randn, ref_rmsnorm

triton_skip()  # Triton's interpreter on CPU: before any kernel is defined


NORM_SHAPES = [(1, 4096), (7, 1000), (33, 128 * 3 + 1)]


def over_norm_cases(test: Callable[..., None]) -> Callable[..., None]:
    """Run ``test`` over every dtype, shape of ``NORM_SHAPES`` and both norms (``gemma``:
    Gemma's ``1 + w`` or plain RMSNorm): the grid the out-of-place and fused tests share."""
    test = pytest.mark.parametrize("gemma", [False, True], ids=["rms", "gemma"])(test)
    test = pytest.mark.parametrize("shape", NORM_SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")(test)
    return pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)(test)


@over_norm_cases
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


@over_norm_cases
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


@gpu_only
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


@pytest.mark.parametrize("hidden", [32767, 32768, 32769, 65536, 131072])
@pytest.mark.parametrize("fused", [False, True], ids=["plain", "fused"])
def test_norm_blocks_never_hold_more_than_32k_values_of_a_row(hidden: int, fused: bool) -> None:
    """A single-pass program keeps its row in registers: 32768 values (64 KiB of fp16) is the
    most the kernel is written for; a wider row loops over ``LOOP_BLOCK`` columns.  Asked of
    the rules only (the output is right either way, so no CPU run of the kernel tells)."""
    for rows in (1, 8, 4096):
        cfg = norm_launch.config(rows, hidden, fused)
        assert cfg["BLOCK_M"] * cfg["BLOCK_N"] <= 32768
        assert norm_launch.single_pass(hidden) is (hidden <= 32768)
