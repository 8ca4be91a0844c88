"""Our kernels as ``torch.ops.<namespace>.<op>``, under sgl-kernel's own op schemas.

Why: sglang calls some kernels through ``torch.ops.sgl_kernel.*`` rather than the
Python wrappers, and sglang >= 0.5.9 registers fake (meta) implementations for
``sgl_kernel::*`` ops when it is imported, which fails when the op does not exist.
Where the real ``common_ops`` library cannot load, :func:`register_torch_ops` defines
the ops with the same schemas (argument names, types and mutability, read from the
strings in sgl-kernel's ``common_ops.abi3.so``) and binds our implementations for
CPU and CUDA.

It never replaces anything: an op that already exists keeps its kernels; where it
exists with our schema but has no kernel for a dispatch key, ours is added for that
key only.  Calling it again is a no-op.  Call it only once the real library is known
not to load: a ``common_ops`` loaded afterwards would fail to define the same names.
Fake implementations are left to sglang (registering one twice is an error);
``fake=True`` adds no-op ones where none exist, for use without sglang.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

__all__ = ["SCHEMAS", "register_torch_ops"]

_NORM = "(Tensor! output, Tensor input, Tensor weight, float eps, bool enable_pdl) -> ()"
_FUSED = "(Tensor! input, Tensor! residual, Tensor weight, float eps, bool enable_pdl) -> ()"
_ACT = "(Tensor! out, Tensor input) -> ()"
_ROPE = ("(Tensor q, Tensor k, Tensor! q_rope, Tensor! k_rope, Tensor cos_sin_cache, "
         "Tensor pos_ids, bool interleave, {arg}, Tensor? v, Tensor!? k_buffer, "
         "Tensor!? v_buffer, Tensor? kv_cache_loc) -> ()")

_COMMON = {
    "rmsnorm": "rmsnorm" + _NORM,
    "fused_add_rmsnorm": "fused_add_rmsnorm" + _FUSED,
    "gemma_rmsnorm": "gemma_rmsnorm" + _NORM,
    "gemma_fused_add_rmsnorm": "gemma_fused_add_rmsnorm" + _FUSED,
    "silu_and_mul": "silu_and_mul" + _ACT,
    "gelu_and_mul": "gelu_and_mul" + _ACT,
    "gelu_tanh_and_mul": "gelu_tanh_and_mul" + _ACT,
}

#: Op schemas as sgl-kernel registers them, per sgl-kernel version they were read from.
SCHEMAS: dict[str, dict[str, str]] = {
    "0.3.18": {
        **_COMMON,
        "apply_rope_pos_ids_cos_sin_cache":
            "apply_rope_pos_ids_cos_sin_cache" + _ROPE.format(arg="bool enable_pdl"),
        "topk_softmax": "topk_softmax(Tensor! topk_weights, Tensor! topk_indices, "
                        "Tensor gating_output, bool renormalize, float moe_softcapping, "
                        "Tensor? correction_bias) -> ()",
    },
    "0.3.5": {
        **_COMMON,
        "apply_rope_pos_ids_cos_sin_cache":
            "apply_rope_pos_ids_cos_sin_cache" + _ROPE.format(arg="int cuda_stream"),
        "topk_softmax": "topk_softmax(Tensor! topk_weights, Tensor! topk_indices, "
                        "Tensor gating_output, bool renormalize) -> ()",
    },
}

_libraries: list[Any] = []  # torch.library.Library objects: dropping one unregisters it
_ours: set[str] = set()  # "namespace::op" defined or extended here


def _rmsnorm(output: torch.Tensor, input: torch.Tensor, weight: torch.Tensor, eps: float,
             enable_pdl: bool) -> None:
    from ..ops.norm import norm_into

    norm_into(output, input, None, weight, eps, 0.0)


def _gemma_rmsnorm(output: torch.Tensor, input: torch.Tensor, weight: torch.Tensor,
                   eps: float, enable_pdl: bool) -> None:
    from ..ops.norm import norm_into

    norm_into(output, input, None, weight, eps, 1.0)


def _fused_add_rmsnorm(input: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor,
                       eps: float, enable_pdl: bool) -> None:
    from ..ops.norm import norm_into

    norm_into(input, input, residual, weight, eps, 0.0)


def _gemma_fused_add_rmsnorm(input: torch.Tensor, residual: torch.Tensor,
                             weight: torch.Tensor, eps: float, enable_pdl: bool) -> None:
    from ..ops.norm import norm_into

    norm_into(input, input, residual, weight, eps, 1.0)


def _act(kind: int) -> Callable[[torch.Tensor, torch.Tensor], None]:
    def impl(out: torch.Tensor, input: torch.Tensor) -> None:
        from ..ops.activation import act_and_mul_into

        act_and_mul_into(out, input, kind)

    return impl


def _rope(q: torch.Tensor, k: torch.Tensor, q_rope: torch.Tensor, k_rope: torch.Tensor,
          cos_sin_cache: torch.Tensor, pos_ids: torch.Tensor, interleave: bool,
          pdl_or_stream: object, v: torch.Tensor | None = None,
          k_buffer: torch.Tensor | None = None, v_buffer: torch.Tensor | None = None,
          kv_cache_loc: torch.Tensor | None = None) -> None:
    from ..ops.rope import rope_into

    rope_into(q, k, q_rope, k_rope, cos_sin_cache, pos_ids, interleave,
              v, k_buffer, v_buffer, kv_cache_loc)


def _topk_softmax(topk_weights: torch.Tensor, topk_indices: torch.Tensor,
                  gating_output: torch.Tensor, renormalize: bool,
                  moe_softcapping: float = 0.0,
                  correction_bias: torch.Tensor | None = None) -> None:
    from ..ops.moe_topk import topk_softmax_into

    topk_softmax_into(topk_weights, topk_indices, gating_output, renormalize,
                      moe_softcapping, correction_bias)


_IMPLS: dict[str, Callable[..., None]] = {
    "rmsnorm": _rmsnorm,
    "fused_add_rmsnorm": _fused_add_rmsnorm,
    "gemma_rmsnorm": _gemma_rmsnorm,
    "gemma_fused_add_rmsnorm": _gemma_fused_add_rmsnorm,
    "silu_and_mul": _act(0),
    "gelu_and_mul": _act(1),
    "gelu_tanh_and_mul": _act(2),
    "apply_rope_pos_ids_cos_sin_cache": _rope,
    "topk_softmax": _topk_softmax,
}


def _signature(schema: Any) -> list[tuple[str, str]]:
    return [(a.name, str(a.type)) for a in schema.arguments]


def _existing_schema(namespace: str, name: str) -> Any | None:
    import torch

    try:
        packet = getattr(getattr(torch.ops, namespace), name)
    except (AttributeError, RuntimeError):
        return None
    return packet.default._schema


def _has_kernel(qualname: str, key: str) -> bool:
    import torch

    try:
        return bool(torch._C._dispatch_has_kernel_for_dispatch_key(qualname, key))
    except Exception:  # private API; if it is gone, assume a kernel is there
        return True


def register_torch_ops(namespace: str = "sgl_kernel", *, schema_version: str = "0.3.18",
                       dispatch_keys: tuple[str, ...] = ("CPU", "CUDA"),
                       fake: bool = False) -> dict[str, str]:
    """Define the ops under ``namespace`` where missing; returns ``{op: what happened}``.

    Outcomes: ``defined`` (schema and our kernels added), ``kernels-added:<keys>`` (the
    op existed with our schema but lacked kernels for those keys), ``ours`` (done by
    an earlier call), ``exists`` (left alone: it has kernels for every key), and
    ``exists-other-schema`` (left alone: its schema differs from ``schema_version``'s).
    """
    import torch

    if schema_version not in SCHEMAS:
        raise ValueError(f"schema_version must be one of {sorted(SCHEMAS)}, got "
                         f"{schema_version!r}")
    result: dict[str, str] = {}
    lib: Any = None
    for name, schema in SCHEMAS[schema_version].items():
        qualname = f"{namespace}::{name}"
        if qualname in _ours:
            result[name] = "ours"
            continue
        if lib is None:
            lib = torch.library.Library(  # type: ignore[no-untyped-call, unused-ignore]
                namespace, "FRAGMENT")
        existing = _existing_schema(namespace, name)
        if existing is None:
            lib.define(schema)
            for key in dispatch_keys:
                lib.impl(name, _IMPLS[name], key)
            result[name] = "defined"
            _ours.add(qualname)
            if fake:
                _register_fake(qualname, lib)
            continue
        wanted = torch._C.parse_schema(f"{namespace}::{schema}")
        if _signature(existing) != _signature(wanted):
            result[name] = "exists-other-schema"
            continue
        missing = [key for key in dispatch_keys if not _has_kernel(qualname, key)]
        if not missing:
            result[name] = "exists"
            continue
        for key in missing:
            lib.impl(name, _IMPLS[name], key)
        result[name] = "kernels-added:" + ",".join(missing)
        _ours.add(qualname)
    if lib is not None:
        _libraries.append(lib)
    return result


def _register_fake(qualname: str, lib: Any) -> None:
    import torch

    def fake_impl(*args: object) -> None:
        return None

    try:
        torch.library.register_fake(qualname, fake_impl, lib=lib)
    except RuntimeError:  # one is registered already (sglang's, say): keep it
        pass
