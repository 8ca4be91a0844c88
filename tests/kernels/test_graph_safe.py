"""The eager tier runs inside a CUDA graph capture: no op reads a device value on the host.

sglang captures its decode step in a CUDA graph, MoE routing and FP8 quantisation
included.  Inside a capture nothing may wait for the device: ``.item()``, boolean-mask
indexing, ``bincount``, ``nonzero`` or ``repeat_interleave`` by a tensor of counts all
do, and sglang's server then dies at start-up ("operation not permitted when stream is
capturing").  The eager tier's ``moe_align_block_size`` did exactly that on the H200
(2026-12-01, ``speed-qwen3moe-none-torch``).

Without a GPU the same property can be checked with TorchDynamo: tracing an op with
``fullgraph=True`` fails on every operation whose output shape or control flow depends
on tensor values.  Each op below is traced through its public entry point
(``sglang_shims.kernels``) on the eager tier and must give exactly what the plain call
gives.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from sglang_shims import kernels as K

from ..support.align import align_buffers

F8 = torch.float8_e4m3fn


def _gen() -> torch.Generator:
    return torch.Generator().manual_seed(7)


def _moe_align() -> tuple[Callable[..., Any], tuple[Any, ...]]:
    g = _gen()
    ids = torch.randint(-2, 9, (6, 2), dtype=torch.int32, generator=g)
    n_buckets, bs = 9, 4
    bufs = align_buffers(ids.numel(), n_buckets, bs, "cpu")

    def call(ids: Any, s: Any, e: Any, p: Any, c: Any, pad: bool, ignore: bool) -> Any:
        K.moe_align_block_size(ids, n_buckets, bs, s, e, p, c, pad, ignore)
        return s, e, p, c
    return call, (ids, *bufs)


def _cases() -> dict[str, tuple[Callable[..., Any], tuple[Any, ...]]]:
    g = _gen()
    x = torch.randn(5, 64, generator=g)
    w = torch.randn(64, generator=g)
    gate = torch.randn(5, 8, generator=g)
    rows, heads, kv, head = 5, 4, 2, 16
    cache = torch.randn(32, head, generator=g)
    a8 = (torch.randn(5, 256, generator=g) * 50).to(F8)
    b8 = (torch.randn(128, 256, generator=g) * 50).to(F8).t()
    align_call, align_args = _moe_align()

    def norm(x: Any, w: Any) -> Any:
        return K.rmsnorm(x, w), K.gemma_rmsnorm(x, w)

    def add_norm(x: Any, r: Any, w: Any) -> Any:
        K.fused_add_rmsnorm(x, r, w)
        return x, r

    def acts(x: Any) -> Any:
        return K.silu_and_mul(x), K.gelu_and_mul(x), K.gelu_tanh_and_mul(x)

    def rope(pos: Any, q: Any, k: Any, cache: Any) -> Any:
        K.apply_rope_with_cos_sin_cache_inplace(pos, q, k, head, cache, True)
        return q, k

    def topk(logits: Any) -> Any:
        wts, ids = torch.empty(5, 2), torch.empty(5, 2, dtype=torch.int32)
        K.topk_softmax(wts, ids, logits, True)
        return wts, ids

    def gate_fn(x: Any) -> Any:
        return K.moe_fused_gate(x, torch.zeros(8), 4, 2, 2)

    def moe_sum(x: Any) -> Any:
        out = torch.empty(5, 64)
        K.moe_sum_reduce(x, out, 0.5)
        return out

    def per_token(x: Any) -> Any:
        q, s = torch.empty(x.shape, dtype=F8), torch.empty(x.shape[0], 1)
        K.sgl_per_token_quant_fp8(x, q, s)
        return q.float(), s

    def per_tensor(x: Any) -> Any:
        q, s = torch.empty(x.shape, dtype=F8), torch.zeros(1)
        K.sgl_per_tensor_quant_fp8(x, q, s, False)
        return q.float(), s

    def per_group(x: Any) -> Any:
        q, s = torch.empty(x.shape, dtype=F8), torch.empty(x.shape[0], 2)
        K.sgl_per_token_group_quant_fp8(x, q, s, 32, 1e-10, -448.0, 448.0)
        return q.float(), s

    def scaled_mm(a: Any, b: Any, sa: Any, sb: Any) -> Any:
        return K.fp8_scaled_mm(a, b, sa, sb, torch.float32)

    def block_mm(a: Any, b: Any, sa: Any, sb: Any) -> Any:
        return K.fp8_blockwise_scaled_mm(a, b, sa, sb, torch.float32)

    return {
        "rmsnorm": (norm, (x, w)),
        "fused_add_rmsnorm": (add_norm, (x.clone(), torch.randn(5, 64, generator=g), w)),
        "gated activations": (acts, (torch.randn(5, 128, generator=g),)),
        "apply_rope_with_cos_sin_cache_inplace": (rope, (
            torch.randint(0, 32, (rows,), generator=g), torch.randn(rows, heads * head,
                                                                    generator=g),
            torch.randn(rows, kv * head, generator=g), cache)),
        "topk_softmax": (topk, (gate,)),
        "moe_fused_gate": (gate_fn, (gate,)),
        "moe_sum_reduce": (moe_sum, (torch.randn(5, 3, 64, generator=g),)),
        "moe_align_block_size": (align_call, (*align_args, True, False)),
        "moe_align_block_size ignore_invalid": (align_call, (*align_args, False, True)),
        "sgl_per_token_quant_fp8": (per_token, (x,)),
        "sgl_per_tensor_quant_fp8": (per_tensor, (x,)),
        "sgl_per_token_group_quant_fp8": (per_group, (x,)),
        "fp8_scaled_mm": (scaled_mm, (a8, b8, torch.rand(5, 1, generator=g) + 0.5,
                                      torch.rand(128, 1, generator=g) + 0.5)),
        "fp8_blockwise_scaled_mm": (block_mm, (a8, b8, torch.rand(5, 2, generator=g) + 0.5,
                                               torch.rand(2, 1, generator=g) + 0.5)),
    }


def _clone(args: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(a.clone() if isinstance(a, torch.Tensor) else a for a in args)


def _flat(result: Any) -> list[Any]:
    return list(result) if isinstance(result, tuple) else [result]


@pytest.mark.parametrize("name", sorted(_cases()))
def test_eager_op_traces_without_reading_the_device(name: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SGLANG_SHIMS_KERNEL_BACKEND", "torch")
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    torch._dynamo.reset()
    fn, args = _cases()[name]
    want = _flat(fn(*_clone(args)))
    traced = torch.compile(fn, backend="eager", fullgraph=True, dynamic=False)
    got = _flat(traced(*_clone(args)))
    for g, w in zip(got, want, strict=True):
        assert torch.equal(g, w), name
