"""FP8 (e4m3) activation quantisation (``kernels.ops.fp8_quant``): per token group (row-,
column- and TMA-major scales, UE8M0 power-of-two scales), per token and per tensor
(dynamic, into a larger scale, static).

The scale from float64 ``max|x|`` (rtol 1e-6: the kernels compute it in fp32), the values
as torch rounds the float64 product (``assert_fp8`` in ``tests/support/references.py``);
``test_fp8_ties_round_to_even`` feeds exact midpoints, where no slack exists.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed: the kernel tests need it")

from sglang_shims import kernels as K

from ..support.kernels import triton_skip
from ..support.programs import program
from ..support.references import DTYPE_IDS, DTYPES, FP8, assert_fp8, spread
from ..support.run import need, run_python

SEED = 20261201
triton_skip()  # Triton's interpreter on CPU: before any kernel is defined


GROUP_CASES = [((1, 128), 128), ((7, 384), 128), ((33, 256), 64), ((2, 3, 256), 128)]


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("case", GROUP_CASES, ids=lambda c: f"{'x'.join(map(str, c[0]))}-g{c[1]}")
@pytest.mark.parametrize("layout", ["rows", "columns", "tma"])
def test_per_token_group_quant(backend: str, gen: torch.Generator,
                               case: tuple[tuple[int, ...], int], dtype: torch.dtype,
                               layout: str) -> None:
    shape, gs = case
    x = spread(gen, shape, dtype, backend)
    rows, groups = x.numel() // shape[-1], shape[-1] // gs
    if layout == "rows":
        s = torch.full((rows, groups), float("nan"), device=backend)
    else:  # sglang's column-major scales; "tma" pads the rows to a multiple of 4
        padded = rows if layout == "columns" else -(-rows // 4) * 4
        s = torch.full((groups, padded), float("nan"), device=backend).t()[:rows]
    q = torch.empty(x.shape, dtype=FP8, device=backend)
    K.sgl_per_token_group_quant_fp8(x, q, s, gs, 1e-10, -448.0, 448.0)
    xg = x.double().reshape(rows, groups, gs)
    amax = xg.abs().amax(dim=-1).clamp_min(1e-10)
    torch.testing.assert_close(s.double().cpu(), (amax / 448).cpu(), rtol=1e-6, atol=0)
    assert_fp8(q.reshape(rows, groups, gs), xg * (448 / amax)[..., None])


def test_per_token_group_quant_ue8m0(backend: str, gen: torch.Generator) -> None:
    """Scales rounded up to powers of two; the division by one is exact."""
    x = spread(gen, (9, 256), torch.bfloat16, backend)
    q, s = torch.empty(x.shape, dtype=FP8, device=backend), torch.empty(9, 2, device=backend)
    K.sgl_per_token_group_quant_8bit(x, q, s, 128, 1e-10, -448.0, 448.0, True)
    amax = x.double().view(9, 2, 128).abs().amax(dim=-1).clamp_min(1e-10)
    want = torch.exp2(torch.ceil(torch.log2(amax / 448)))
    assert s.double().cpu().tolist() == want.cpu().tolist()
    assert_fp8(q.view(9, 2, 128), x.double().view(9, 2, 128) / want[..., None])


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("shape", [(1, 4096), (5, 1000), (17, 2112)],
                         ids=lambda s: "x".join(map(str, s)))
def test_per_token_quant(backend: str, gen: torch.Generator, shape: tuple[int, int],
                         dtype: torch.dtype) -> None:
    x = spread(gen, shape, dtype, backend)
    q = torch.empty(shape, dtype=FP8, device=backend)
    s = torch.full((shape[0], 1), float("nan"), device=backend)
    K.sgl_per_token_quant_fp8(x, q, s)
    amax = x.double().abs().amax(dim=1, keepdim=True)
    torch.testing.assert_close(s.double().cpu(), (amax / 448).cpu(), rtol=1e-6, atol=0)
    assert_fp8(q, x.double() * (448 / amax))


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_per_tensor_quant(backend: str, gen: torch.Generator, dtype: torch.dtype) -> None:
    x = spread(gen, (13, 777), dtype, backend)
    amax = x.double().abs().max()
    q, s = torch.empty(x.shape, dtype=FP8, device=backend), torch.zeros(1, device=backend)
    K.sgl_per_tensor_quant_fp8(x, q, s, False)  # dynamic, into sglang's zeroed buffer
    torch.testing.assert_close(s.double().cpu(), (amax / 448).reshape(1).cpu(), rtol=1e-6,
                               atol=0)
    assert_fp8(q, x.double() / s.double())
    big = torch.full((1,), float(amax) / 100, device=backend)  # an atomic max keeps the larger
    K.sgl_per_tensor_quant_fp8(x, q, big, False)
    assert big.item() == pytest.approx(float(amax) / 100)
    assert_fp8(q, x.double() / big.double())
    static = torch.full((1,), 0.01, device=backend)
    K.sgl_per_tensor_quant_fp8(x, q, static, True)
    assert static.item() == pytest.approx(0.01)
    assert_fp8(q, x.double() / static.double())


def test_fp8_ties_round_to_even(backend: str) -> None:
    """Every midpoint between neighbouring e4m3 values, scaled by 1: torch's bits exactly
    (Triton's interpreter on its own rounds these away from zero)."""
    every = torch.arange(256, dtype=torch.uint8).view(FP8).double()
    every = every[torch.isfinite(every)].unique()
    mids = (every[1:] + every[:-1]) / 2
    x = torch.cat([mids, -mids, every]).float().to(backend)
    q, s = torch.empty(x.shape, dtype=FP8, device=backend), torch.ones(1, device=backend)
    K.sgl_per_tensor_quant_fp8(x, q, s, True)
    assert q.cpu().view(torch.uint8).tolist() == x.cpu().to(FP8).view(torch.uint8).tolist()


def test_fp8_zero_input(backend: str) -> None:
    """All zeros quantise to zeros: scale eps/448 per group, 0 per token and per tensor."""
    x = torch.zeros(3, 256, dtype=torch.bfloat16, device=backend)
    q, s = torch.full(x.shape, 1.0, device=backend).to(FP8), torch.empty(3, 2, device=backend)
    K.sgl_per_token_group_quant_fp8(x, q, s, 128, 1e-10, -448.0, 448.0)
    assert (q.float() == 0).all() and torch.allclose(s, torch.full_like(s, 1e-10 / 448))
    q.fill_(1.0)
    s1 = torch.empty(3, 1, device=backend)
    K.sgl_per_token_quant_fp8(x, q, s1)
    assert (q.float() == 0).all() and (s1 == 0).all()
    q.fill_(1.0)
    s0 = torch.zeros(1, device=backend)
    K.sgl_per_tensor_quant_fp8(x, q, s0, False)
    assert (q.float() == 0).all() and s0.item() == 0


def test_fp8_rejects(backend: str) -> None:
    x = torch.zeros(2, 256, dtype=torch.bfloat16, device=backend)
    q, s = torch.empty(x.shape, dtype=FP8, device=backend), torch.empty(2, 2, device=backend)
    with pytest.raises(TypeError, match="float8_e4m3fn"):
        K.sgl_per_token_quant_fp8(x, torch.empty(x.shape, dtype=torch.int8, device=backend), s)
    with pytest.raises(ValueError, match="multiple of group_size"):
        K.sgl_per_token_group_quant_fp8(x, q, s, 100, 1e-10, -448.0, 448.0)
    with pytest.raises(NotImplementedError, match="packed ue8m0"):
        K.sgl_per_token_group_quant_fp8(x, q, s.int(), 128, 1e-10, -448.0, 448.0, True)
    with pytest.raises(NotImplementedError, match="fuse_silu_and_mul"):
        K.sgl_per_token_group_quant_8bit(x, q, s, 128, 1e-10, -448.0, 448.0, False, True)
    with pytest.raises(ValueError, match="-448/448"):
        K.sgl_per_token_group_quant_fp8(x, q, s, 128, 1e-10, -127.0, 127.0)


def test_the_quantisers_divide_correctly_rounded_on_the_gpu() -> None:
    """Compiled for sm_90 (no GPU needed): every fp32 division in the FP8 quantisers is
    IEEE's ``div.rn``.  Triton's ``/`` gives ``div.full.f32``, two units in the last place
    off, which on the H200 moved 0.15% of a bf16 group's values to the neighbouring e4m3
    value; the interpreter these tests otherwise run on divides exactly and cannot see it."""
    need("triton")
    done = run_python(program("kernels/fp8_divisions"), activate=False,
                      env={"TRITON_INTERPRET": ""}, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    found = done.json()
    assert isinstance(found, dict) and len(found) == 5
    for kernel, instructions in found.items():
        assert instructions and set(instructions) <= {"div.rn.f32"}, (kernel, instructions)
