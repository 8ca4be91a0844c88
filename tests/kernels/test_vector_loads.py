"""Row widths Triton does not specialise (not a multiple of 16) still load 16 bytes at a time.

Why: Triton vectorises a load only as far as it can prove the address and mask divisible,
and of an integer argument it knows only "divisible by 16".  Rows of 5000 or 11000 bf16
values were therefore read two bytes at a time, and the norms ran at 0.53-0.83x the real
kernel at exactly those widths on the H200 (benchmarks/results/kernels-models-h200-2026-12-05.md).
The wrappers now pass each count divided by :func:`vector_align` and the kernels multiply it
back by a constexpr.  Held here: the rule itself, that each wrapper passes it, and that
the compiled code then loads 16 bytes (and, for the record, two without it).
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

torch = pytest.importorskip("torch", reason="torch is not installed: the kernel tests need it")

from sglang_shims import kernels as K
from sglang_shims.kernels import compile_lock
from sglang_shims.kernels.runtime import vector_align

from ..support.kernels import select_backend, triton_skip
from ..support.programs import program
from ..support.run import need, run_python


@given(st.sampled_from([1, 2, 4, 8]), st.lists(st.integers(1, 1 << 20), min_size=1, max_size=4))
def test_vector_align_is_the_largest_power_of_two_dividing_every_count(
        itemsize: int, counts: list[int]) -> None:
    align = vector_align(itemsize, *counts)
    assert align & (align - 1) == 0 and 1 <= align <= max(1, 16 // itemsize)
    assert all(c % align == 0 for c in counts)
    if align < 16 // itemsize:
        assert any(c % (2 * align) for c in counts)


def _launch(call: object) -> compile_lock.Launch:
    with compile_lock.recording() as launches:
        call()  # type: ignore[operator]
    assert len(launches) == 1
    return launches[0]


@pytest.fixture
def triton_path(monkeypatch: pytest.MonkeyPatch) -> str:
    if triton_skip():
        pytest.skip(triton_skip())
    return select_backend("triton", monkeypatch, torch.cuda.is_available())


@pytest.mark.parametrize(("width", "stride", "align"),
                         [(5000, 5000, 8), (11000, 11008, 8), (4100, 4100, 4), (5000, 5001, 1),
                          (4096, 4096, 8)])
def test_the_norm_passes_its_counts_divided(triton_path: str, width: int, stride: int,
                                            align: int) -> None:
    x = torch.zeros(3, stride, dtype=torch.bfloat16, device=triton_path)[:, :width]
    w = torch.ones(width, dtype=torch.bfloat16, device=triton_path)
    made = _launch(lambda: K.rmsnorm(x, w, out=torch.empty(3, width, dtype=x.dtype,
                                                         device=triton_path)))
    assert made.kwargs["ALIGN"] == align
    assert made.args[5:9] == (width // align, stride // align, stride // align, width // align)


@pytest.mark.parametrize(("d", "align"), [(2500, 4), (5000, 8), (4100, 4), (4099, 1)])
def test_the_gated_activation_passes_its_counts_divided(triton_path: str, d: int,
                                                       align: int) -> None:
    x = torch.zeros(2, 2 * d, dtype=torch.bfloat16, device=triton_path)
    made = _launch(lambda: K.silu_and_mul(x))
    assert made.kwargs["ALIGN"] == align
    assert made.args[2:5] == (d // align, 2 * d // align, d // align)


FP8 = getattr(torch, "float8_e4m3fn", None)


@pytest.mark.skipif(FP8 is None, reason="this torch has no float8_e4m3fn")
@pytest.mark.parametrize(("width", "align"), [(5000, 8), (4100, 4), (4099, 1)])
def test_the_fp8_quantisers_pass_their_counts_divided(triton_path: str, width: int,
                                                      align: int) -> None:
    x = torch.zeros(3, width, dtype=torch.bfloat16, device=triton_path)
    q = torch.empty(3, width, dtype=FP8, device=triton_path)
    made = _launch(lambda: K.sgl_per_token_quant_fp8(x, q, torch.empty(3, device=triton_path)))
    assert made.kwargs["ALIGN"] == align
    assert made.args[4:7] == (width // align, width // align, width // align)
    with compile_lock.recording() as launches:
        K.sgl_per_tensor_quant_fp8(x, q, torch.zeros(1, device=triton_path), False)
    count_at = {"absmax_kernel": 2, "per_tensor_quant_kernel": 3}  # the flat count's position
    assert [(m.args[count_at[m.kernel.fn.__name__]], m.kwargs["ALIGN"]) for m in launches] == [
        (3 * width // align, align)] * 2


@pytest.mark.parametrize(("hidden", "align"), [(2880, 8), (1000, 8), (1001, 1)])
def test_the_moe_sum_passes_its_counts_divided(triton_path: str, hidden: int,
                                               align: int) -> None:
    x = torch.zeros(2, 4, hidden, dtype=torch.bfloat16, device=triton_path)
    made = _launch(lambda: K.moe_sum_reduce(x, torch.empty(2, hidden, dtype=x.dtype,
                                                           device=triton_path), 1.0))
    assert made.kwargs["ALIGN"] == align
    assert (made.args[2], *made.args[4:7]) == tuple(
        v // align for v in (hidden, 4 * hidden, hidden, hidden))


def test_aligned_rows_compile_to_16_byte_loads() -> None:
    """Compiled for sm_90, no GPU needed: with ``ALIGN`` 8 every global load of a bf16 row is
    ``ld.global.v4.b32``; with 1 (what Triton knew before) they are single ``b16`` loads."""
    need("triton")
    done = run_python(program("kernels/vector_loads"), activate=False,
                      env={"TRITON_INTERPRET": ""}, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    found = done.json()
    kernels = ("rmsnorm", "act_and_mul", "per_token_quant", "moe_sum")
    assert found == {**{f"{k} 1": ["ld.global.b16"] for k in kernels},
                     **{f"{k} 8": ["ld.global.v4.b32"] for k in kernels}}
