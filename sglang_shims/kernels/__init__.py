"""Triton stand-ins for ``sgl_kernel`` ops, for when the real kernel package cannot run.

Why: each ``sgl-kernel`` wheel is compiled for a fixed set of GPU architectures and
against one torch ABI; off those pins ``common_ops`` fails to load and sglang stops,
even though the few elementwise kernels every model needs (RMSNorm, gated
activations, RoPE, MoE routing, alignment and reduction, FP8 activation quantisation
and matmuls)
are simple.  These are written in Triton, so they are
compiled just in time for whatever GPU the process has, and each op is one kernel
launch, as in sgl-kernel (the fused residual-add + norm is one kernel, not two), except
dynamic per-tensor FP8 quantisation (two, as sgl-kernel) and ``moe_align_block_size``
(three; sgl-kernel's takes two).

Each function has the signature, defaults, in-place behaviour, return value and
output dtypes of the sgl-kernel Python function of the same name (read from
sgl-kernel 0.3.5 and 0.3.18; each module's docstring gives the details and what is
accepted beyond sgl-kernel).  A function runs its Triton kernel for CUDA tensors (or
anything when ``TRITON_INTERPRET=1``) and a plain-PyTorch path otherwise, including
when ``import triton`` fails.

Nothing heavy is imported here: torch and the op modules load on first attribute
access, and Triton only when a kernel first runs.

The package by concern (each subpackage's ``__init__`` says more):

* ``ops/<family>/`` -- the ops: wrappers, Triton kernels and launch rules, one family each;
* ``runtime.py``, ``device.py`` and ``compile_lock.py`` -- what the families share: the
  backend choice, the GPU a launch rule chooses for, shape helpers, one compile at a time
  across processes;
* ``standin/`` -- what patches use to stand in for sgl_kernel and sglang's JIT kernels;
* ``surface/`` -- facts read from the published wheels (export surfaces, the names each
  sglang release imports, the MoE/FP8 ops it calls): the only reader of ``surface/data``;
* ``serving/`` -- plans built on those facts: who serves each name, which ops a model
  reaches, the verdict for the model a server loads.

* :data:`OPS` -- ``{sgl_kernel function name: our implementation}``.
* :func:`register_torch_ops` -- the same ops as ``torch.ops.sgl_kernel.*`` under
  sgl-kernel's op schemas, for code that calls them through the dispatcher.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any

__all__ = [
    "OPS",
    "FusedSetKVBufferArg",
    "apply_rope_with_cos_sin_cache_inplace",
    "fp8_blockwise_scaled_mm",
    "fp8_scaled_mm",
    "fused_add_rmsnorm",
    "gelu_and_mul",
    "gelu_tanh_and_mul",
    "gemma_fused_add_rmsnorm",
    "gemma_rmsnorm",
    "moe_align_block_size",
    "moe_fused_gate",
    "moe_sum",
    "moe_sum_reduce",
    "register_torch_ops",
    "rmsnorm",
    "sgl_per_tensor_quant_fp8",
    "sgl_per_token_group_quant_8bit",
    "sgl_per_token_group_quant_fp8",
    "sgl_per_token_quant_fp8",
    "silu_and_mul",
    "topk_softmax",
]

# Public name -> the module that defines it.
_WHERE: dict[str, str] = {
    "rmsnorm": "ops.norm",
    "fused_add_rmsnorm": "ops.norm",
    "gemma_rmsnorm": "ops.norm",
    "gemma_fused_add_rmsnorm": "ops.norm",
    "silu_and_mul": "ops.activation",
    "gelu_and_mul": "ops.activation",
    "gelu_tanh_and_mul": "ops.activation",
    "apply_rope_with_cos_sin_cache_inplace": "ops.rope",
    "topk_softmax": "ops.moe_topk",
    "moe_align_block_size": "ops.moe_align",
    "moe_sum": "ops.moe_align",
    "moe_sum_reduce": "ops.moe_align",
    "sgl_per_token_group_quant_fp8": "ops.fp8_quant",
    "sgl_per_token_group_quant_8bit": "ops.fp8_quant",
    "sgl_per_token_quant_fp8": "ops.fp8_quant",
    "sgl_per_tensor_quant_fp8": "ops.fp8_quant",
    "fp8_scaled_mm": "ops.fp8_gemm",
    "fp8_blockwise_scaled_mm": "ops.fp8_gemm",
    "moe_fused_gate": "ops.moe_gate",
}
_EXTRA: dict[str, str] = {
    "FusedSetKVBufferArg": "ops.rope",
    "register_torch_ops": "standin.torch_ops",
}


def _load(name: str, module: str) -> Any:
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


class _LazyOps(Mapping[str, Callable[..., Any]]):
    """A read-only mapping whose values import their module on first lookup."""

    def __getitem__(self, name: str) -> Callable[..., Any]:
        fn: Callable[..., Any] = _load(name, _WHERE[name])
        return fn

    def __iter__(self) -> Iterator[str]:
        return iter(_WHERE)

    def __len__(self) -> int:
        return len(_WHERE)

    def __contains__(self, name: object) -> bool:
        return name in _WHERE  # a name test imports nothing

    def __repr__(self) -> str:
        return f"OPS({sorted(_WHERE)})"


#: ``{sgl_kernel function name: our implementation with the same signature}``.
OPS: Mapping[str, Callable[..., Any]] = _LazyOps()


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name) or _EXTRA.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = _load(name, module)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
