"""The gated activations ``silu_and_mul``, ``gelu_and_mul`` and ``gelu_tanh_and_mul``
(``kernels.ops.activation``) against float64, in every dtype and in 3-D and strided
layouts; ``test_gpu_large_silu`` takes a prefill-sized input compiled."""

from __future__ import annotations

from collections.abc import Callable

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed: the kernel tests need it")

from sglang_shims import kernels as K

from ..support.kernels import gpu_only, triton_skip
from ..support.references import DTYPE_IDS, DTYPES, assert_close, nan_like, randn, ref_act

triton_skip()  # Triton's interpreter on CPU: before any kernel is defined


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


@gpu_only
def test_gpu_large_silu(gen: torch.Generator) -> None:
    dtype = torch.bfloat16
    x = randn(gen, 4096, 2 * 14336, dtype=dtype, device="cuda")
    assert_close(K.silu_and_mul(x), ref_act(x, "silu"), dtype, "silu_and_mul")
