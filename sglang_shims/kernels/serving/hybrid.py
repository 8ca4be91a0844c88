"""Who serves each ``sgl_kernel`` name sglang imports: the real kernel, an adapter, ours, none.

Why: a kernel newer than the sglang on top of it has dropped names that sglang still
calls.  sglang 0.5.1 on sglang-kernel 0.4.5 (the build that loads with torch 2.11 and
CUDA 13) imports 15 names 0.4.5 no longer has, among them
``apply_rope_with_cos_sin_cache_inplace``, which every model's rotary embedding calls
on every forward.  A proxy that raises on call gets ``import sglang`` through but not
the first forward.  The hybrid tier keeps the real AOT kernel for every op it still
has and, for each name it lacks, picks the best stand-in that keeps the semantics of
the version sglang expects:

1. **adapter** -- the kernel still has the op under another name or signature: call
   it, translating the arguments.  ``apply_rope_with_cos_sin_cache_inplace`` (removed
   in 0.4.0, PR #20277) has one: ``rotary_embedding(positions, query, key, head_size,
   cos_sin_cache, is_neox)`` (0.3.18.post3 on; vLLM's kernel).  Its arithmetic and its
   cos/sin are in the activations' dtype and it cannot write the KV cache, whereas
   sglang expects fp32 cos/sin, fp32 arithmetic and the fused KV write; so the
   adapter calls it only where the result is the same -- float32 ``query``/``key``,
   no ``fused_set_kv_buffer_arg`` -- and our Triton kernel otherwise;
2. **ours** -- :mod:`sglang_shims.kernels` implements it with sgl-kernel's signature
   (norms, gated activations, RoPE, MoE top-k softmax, alignment and reduction, FP8
   activation quantisation, ``FusedSetKVBufferArg``);
3. **none** -- a lazy proxy whose call raises an error naming what to install.

:func:`plan` decides from names alone (the live module's, or the export data's for
``sglang-shims doctor``), so the patch and the doctor give the same table.  Nothing
here imports torch; the adapter imports it on its first call, when the real kernel
has long brought it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from functools import cache
from typing import Any

REAL, ADAPTER, OURS, NONE = "real kernel", "adapter", "ours", "none"
PROVIDERS = (REAL, ADAPTER, OURS, NONE)

#: {name sglang imports: the kernel export an adapter serves it through}.
ADAPTED: dict[str, str] = {"apply_rope_with_cos_sin_cache_inplace": "rotary_embedding"}

#: Names the export data lists from a kernel version on, but only on non-CUDA builds
#: (from the version given, the wheel's ``__init__.py`` binds them only in its branch for
#: non-CUDA builds): {name: first version where CUDA builds lack it}.
CUDA_ABSENT: dict[str, str] = {"min_p_sampling_from_probs": "0.4.0",
                               "top_k_top_p_sampling_from_probs": "0.4.0"}

_ADAPTER_NOTE = "float32 q/k without fused KV write, else ours"

#: Ops the kernel has but only for half types: sgl-kernel's norms and gated activations
#: dispatch float16 and bfloat16 only (``DISPATCH_PYTORCH_DTYPE_TO_CTYPE_FP16`` in its
#: csrc; sglang-kernel 0.4.5 on an H200: "rmsnorm(...) failed to dispatch data type
#: Float", benchmarks/results/e2e-sglang0.5.17-h200-2026-12-01.md).  Where the hybrid
#: tier acts, a float32 call of one of these goes to ours instead of raising.
HALF_ONLY = ("rmsnorm", "fused_add_rmsnorm", "gemma_rmsnorm", "gemma_fused_add_rmsnorm",
             "silu_and_mul", "gelu_and_mul", "gelu_tanh_and_mul")
HALF_ONLY_LABEL = f"{REAL} (float16/bfloat16); {OURS} (float32: the kernel has none)"


@dataclass(frozen=True)
class Route:
    """One name's provider and what exactly serves it."""

    provider: str
    via: str = ""

    def label(self) -> str:
        return f"{self.provider}: {self.via}" if self.via else self.provider


@cache
def ours() -> frozenset[str]:
    """The names :mod:`sglang_shims.kernels` implements with sgl-kernel's signature."""
    from .. import OPS

    return frozenset(OPS) | {"FusedSetKVBufferArg"}


def route(name: str, exported: Collection[str]) -> Route:
    """The provider of ``name`` when the kernel binds ``exported``."""
    if name in exported:
        return Route(REAL)
    successor = ADAPTED.get(name)
    if successor is not None and successor in exported:
        return Route(ADAPTER, f"sgl_kernel.{successor} ({_ADAPTER_NOTE})")
    if name in ours():
        return Route(OURS, f"sglang_shims.kernels.{name}")
    return Route(NONE)


def plan(needed: Iterable[str], exported: Collection[str]) -> dict[str, Route]:
    """{name: route} for every name sglang needs."""
    return {name: route(name, exported) for name in sorted(needed)}


def cuda_exports(version: str, names: Iterable[str]) -> set[str]:
    """The export data's names for ``version`` less those its CUDA build lacks."""
    from packaging.version import InvalidVersion, Version

    try:
        v = Version(version)
        return {n for n in names
                if n not in CUDA_ABSENT or v < Version(CUDA_ABSENT[n])}
    except InvalidVersion:
        return set(names)


def implementation(name: str, chosen: Route, module: Any) -> Any:
    """What to bind as ``sgl_kernel.<name>`` for an adapter or ours route."""
    from .. import OPS

    if chosen.provider == ADAPTER:
        return _ADAPTERS[name](getattr(module, ADAPTED[name]), OPS[name])
    if chosen.provider == OURS:
        if name == "FusedSetKVBufferArg":
            from ..ops.rope import FusedSetKVBufferArg

            return FusedSetKVBufferArg
        return OPS[name]
    raise ValueError(f"{name}: no implementation for provider {chosen.provider!r}")


def rope_adapter(rotary_embedding: Callable[..., Any], fallback: Callable[..., None]
                 ) -> Callable[..., None]:
    """``apply_rope_with_cos_sin_cache_inplace`` (sgl-kernel <= 0.3.21's signature and
    checks) through the kernel's ``rotary_embedding`` where that gives the same result,
    ``fallback`` (ours) elsewhere."""

    def apply_rope_with_cos_sin_cache_inplace(
        positions: Any, query: Any, key: Any, head_size: int, cos_sin_cache: Any,
        is_neox: bool = True, fused_set_kv_buffer_arg: Any | None = None,
        enable_pdl: bool | None = None,
    ) -> None:
        import torch

        if cos_sin_cache.dtype != torch.float32:
            raise ValueError("cos_sin_cache should be float32")
        if (fused_set_kv_buffer_arg is None and query.dtype == torch.float32
                and key.dtype == torch.float32):
            rotary_embedding(positions.long(), query, key, head_size, cos_sin_cache,
                             is_neox)
            return
        fallback(positions, query, key, head_size, cos_sin_cache, is_neox,
                 fused_set_kv_buffer_arg, enable_pdl)

    apply_rope_with_cos_sin_cache_inplace.__module__ = "sgl_kernel"
    return apply_rope_with_cos_sin_cache_inplace


def widened(needed: Iterable[str], routes: dict[str, Route], exported: Collection[str]
            ) -> list[str]:
    """The :data:`HALF_ONLY` names whose float32 calls go to ours: those sglang imports and
    the kernel binds, and only where ours (or an adapter) already serves a name the
    kernel dropped -- a pair that lacks nothing but proxied names keeps the stock kernel,
    float32 error included."""
    if not any(r.provider in (ADAPTER, OURS) for r in routes.values()):
        return []
    wanted = set(needed)
    return [n for n in HALF_ONLY if n in wanted and n in exported and n in ours()]


def half_only(real: Callable[..., Any], fallback: Callable[..., Any]) -> Callable[..., Any]:
    """``real`` for half-type inputs, ``fallback`` (ours, same signature) for float32,
    which ``real`` rejects at dispatch.  The dtype is read from the first tensor argument
    (``input``), so the kernel's own signature, whatever its version, passes through."""

    def dispatch(*args: Any, **kwargs: Any) -> Any:
        first = args[0] if args else kwargs.get("input")
        if str(getattr(first, "dtype", "")) == "torch.float32":
            return fallback(*args, **kwargs)
        return real(*args, **kwargs)

    dispatch.__name__ = dispatch.__qualname__ = getattr(real, "__name__", "dispatch")
    dispatch.__module__ = "sgl_kernel"
    dispatch.__wrapped__ = real  # type: ignore[attr-defined]
    return dispatch


_ADAPTERS: dict[str, Callable[[Callable[..., Any], Callable[..., None]], Any]] = {
    "apply_rope_with_cos_sin_cache_inplace": rope_adapter,
}


def exported_by_data(version: str) -> set[str] | None:
    """What a CUDA build of kernel ``version`` binds, from the export data (None: unknown).

    Top-level names, names of star-imported submodules and the submodules themselves
    (``from sgl_kernel import allreduce`` loads a file), less :data:`CUDA_ABSENT`.
    """
    from ..surface.exports import bound

    names = bound(version)
    return None if names is None else cuda_exports(version, names)
