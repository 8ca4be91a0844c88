"""Stand-ins for sglang's own JIT-compiled kernels, on the fallback's ops.

From 0.5.9 sglang moves kernels out of sgl_kernel into its own JIT-compiled CUDA modules
(``sglang.jit_kernel``, ``sglang.kernels.ops`` from 0.5.17): RoPE, then the gated
activations.  They build with nvcc at their first call and their torch ops have CUDA
kernels only, so where the fallback stands in for sgl_kernel (no usable compiled kernel)
they fail the same way.  The ``sglang-*-fallback`` patches put these functions in their
place; each takes exactly the parameters of the function it replaces
(:func:`replacements` checks), computes what sglang's CUDA kernel computes (read from the
``.cuh`` sources in the wheels) and runs the fallback's Triton kernel on the GPU, its
PyTorch path on CPU.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..ops import activation, rope

if TYPE_CHECKING:
    import torch

    from ...patching import PatchContext

__all__ = ["ACTIVATION", "ROPE", "apply_rope", "not_served", "replacements", "rotary_embedding",
           "run_activation", "run_activation_filtered",
           "run_activation_sorted_filtered", "stand_in"]


def apply_rope(q: torch.Tensor, k: torch.Tensor, cos_sin_cache: torch.Tensor,
               positions: torch.Tensor, *, is_neox: bool, rope_dim: int = 0,
               fused_args: Any | None = None) -> None:
    """``apply_rope_with_cos_sin_cache_inplace`` as sglang 0.5.10-0.5.23 define it (for
    their ``FusedRopeKernel``, ``elementwise/rope.cuh``).

    Unlike sgl-kernel's function of that name, ``q``/``k`` are already ``[tokens, heads,
    rope_dim]`` (for partial rotary sglang passes the ``[..., :rotary_dim]`` slice of each
    head) and the whole last dimension is rotated in place; ``rope_dim`` (0: the cache's
    width) must equal it.  ``fused_args`` has no scales, its buffers are ``[slots,
    kv_heads * rope_dim]`` and ``cache_loc`` may be int32 like ``positions``.  A call the
    CUDA kernel rejects (its shape checks) raises here too, rather than rotating something
    else.
    """
    import torch

    width = cos_sin_cache.shape[-1]
    name = "apply_rope_with_cos_sin_cache_inplace"
    if cos_sin_cache.dtype != torch.float32:
        raise ValueError(f"{name}: cos_sin_cache must be float32, got {cos_sin_cache.dtype}")
    if rope_dim and rope_dim != width:
        raise ValueError(f"{name}: rope_dim={rope_dim} but cos_sin_cache is "
                         f"{tuple(cos_sin_cache.shape)}")
    if q.dim() != 3 or k.dim() != 3 or q.shape[2] != width or k.shape[2] != width:
        raise ValueError(f"{name}: q and k must be [tokens, heads, {width}], got "
                         f"{tuple(q.shape)} and {tuple(k.shape)}")
    v = kb = vb = loc = None
    if fused_args is not None:
        if q.stride(1) != width or k.stride(1) != width:
            raise ValueError(f"{name}: the fused KV-cache store needs whole heads rotated "
                             f"(rope_dim = head stride), got q strides {q.stride()}")
        v = fused_args.value.view_as(k)
        kb, vb = (b.view(b.shape[0], -1, width)
                  for b in (fused_args.k_buffer, fused_args.v_buffer))
        loc = fused_args.cache_loc
    rope.rope_into(q, k, q, k, cos_sin_cache, positions, not is_neox, v, kb, vb, loc)


def rotary_embedding(positions: torch.Tensor, query: torch.Tensor, key: torch.Tensor | None,
                     head_size: int, cos_sin_cache: torch.Tensor, is_neox: bool = True,
                     ) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``rotary_embedding`` of sglang 0.5.10-0.5.23 (vLLM's kernel, ``elementwise/
    pos_enc.cuh``), which sglang uses for head sizes other than 64/128/256/512.

    ``query``/``key`` are ``[tokens, heads * head_size]`` (or ``[tokens, heads,
    head_size]``, or with ``[batch, seq]`` leading dimensions matching ``positions``),
    rotated in place; ``key`` may be None.  The cache is ``[max_pos, rot_dim]`` in the
    query's dtype (sglang casts it before the call), ``rot_dim <= head_size``; the rest of
    each head is left alone.  Returns ``(query, key)``, as sglang's.
    """
    pos = positions.reshape(-1)
    n = pos.shape[0]
    q3 = query.view(n, -1, head_size)
    # the op always rotates a key; without one, a scratch copy of a query head stands in
    k3 = key.view(n, -1, head_size) if key is not None else q3[:, :1].clone()
    rope.rope_into(q3, k3, q3, k3, cos_sin_cache, pos, not is_neox)
    return query, key


_ACTIVATIONS = {"silu": activation.SILU, "gelu": activation.GELU,
                "gelu_tanh": activation.GELU_TANH}


def _rows(op_name: str, input: torch.Tensor, out: torch.Tensor,
          ) -> tuple[int, torch.Tensor, torch.Tensor]:
    if op_name not in _ACTIVATIONS:
        raise ValueError(f"unsupported activation {op_name!r} (sglang's kernel has "
                         f"{sorted(_ACTIVATIONS)})")
    d = input.shape[-1] // 2
    return _ACTIVATIONS[op_name], input.view(-1, 2 * d), out.view(-1, d)


def run_activation(op_name: str, input: torch.Tensor, out: torch.Tensor) -> None:
    """sglang's ``_run_activation_inplace`` (0.5.11-0.5.23; ``elementwise/activation.cuh``):
    ``out = act(input[..., :d]) * input[..., d:]`` for ``op_name`` silu, gelu (erf) or
    gelu_tanh."""
    act, x, o = _rows(op_name, input, out)
    activation.act_and_mul_into(o, x, act)


def run_activation_filtered(op_name: str, input: torch.Tensor, out: torch.Tensor,
                            expert_ids: torch.Tensor, expert_step: int) -> None:
    """sglang's ``_run_activation_filtered_inplace``: as :func:`run_activation`, but row
    ``t`` of ``out`` is left as it is where ``expert_ids[t // expert_step] == -1`` (a token
    routed to no local expert).  A select, not a boolean index: no host sync, so it can be
    captured in a CUDA graph."""
    import torch

    act, x, o = _rows(op_name, input, out)
    full = torch.empty_like(o)
    activation.act_and_mul_into(full, x, act)
    rows = torch.arange(o.shape[0], device=o.device) // expert_step
    routed = expert_ids.index_select(0, rows) != -1
    o.copy_(torch.where(routed[:, None], full, o))


def not_served() -> str | None:
    """Why sglang's own JIT kernels stay (a retire reason), or None where the fallback
    serves sgl_kernel in this process: only there do the patches replace them."""
    try:
        kernel = importlib.import_module("sgl_kernel")
    except ImportError:
        return "sgl_kernel cannot be imported and the fallback does not stand in for it"
    if not getattr(kernel, "__sglang_shims_fallback__", None):
        return "a real sgl_kernel is loaded: sglang's own JIT kernels are used"
    return None


def run_activation_sorted_filtered(op_name: str, input: torch.Tensor, out: torch.Tensor,
                                   expert_ids: torch.Tensor, expert_step: int,
                                   sorted_token_ids: torch.Tensor,
                                   num_tokens_post_padded: torch.Tensor,
                                   num_valid_tokens: int) -> None:
    """sglang 0.5.22+'s ``_run_activation_sorted_filtered_inplace``: the sorted,
    block-padded MoE layout, where the CUDA kernel also skips the padding rows that the
    down GEMM never reads.  Here those rows are computed like the others (what is written
    there is never read), so this is :func:`run_activation_filtered`."""
    run_activation_filtered(op_name, input, out, expert_ids, expert_step)


def _shape(func: Callable[..., Any], name: str = "") -> list[tuple[str, bool, bool]]:
    """Parameter names, keyword-only-ness and has-a-default, of a function or, for one of
    sglang's ``register_custom_op`` ops (a generic ``(*args, **kwargs)`` wrapper), of the
    ``torch.ops.sglang`` op it registered under its function name."""
    params = list(inspect.signature(func).parameters.values())
    if [p.kind for p in params] == [inspect.Parameter.VAR_POSITIONAL,
                                    inspect.Parameter.VAR_KEYWORD] and name:
        import torch

        packet = getattr(torch.ops.sglang, name, None)
        if packet is None:
            return []
        return [(a.name, a.kwarg_only, a.has_default_value())
                for a in packet.default._schema.arguments]
    return [(p.name, p.kind == p.KEYWORD_ONLY, p.default is not p.empty) for p in params]


def replacements(module: Any, table: Mapping[str, Sequence[Callable[..., Any]]],
                 optional: Sequence[str] = ()) -> dict[str, Callable[..., Any]]:
    """For each name of ``table`` that ``module`` defines, the candidate that takes exactly
    its parameters (names, keyword-only or not, with a default or not: sha256 fingerprints
    pin the rest), so every caller binds the same way --
    including a caller passing keywords the function never took, which then fails as it
    does stock.  A name missing from ``module`` is skipped when listed in ``optional``.
    Raises TypeError for a missing name or one whose parameters no candidate takes:
    nothing safe to do.
    """
    out: dict[str, Callable[..., Any]] = {}
    for name, candidates in table.items():
        theirs = getattr(module, name, None)
        if theirs is None:
            if name in optional:
                continue
            raise TypeError(f"{module.__name__} has no {name}; nothing safe to do")
        wanted = _shape(theirs, name)
        match = [f for f in candidates if wanted and _shape(f) == wanted]
        if not match:
            raise TypeError(f"{module.__name__}.{name}{inspect.signature(theirs)} takes "
                            "parameters no stand-in takes; nothing safe to do")
        out[name] = match[0]
    return out


def stand_in(ctx: PatchContext, table: Mapping[str, Sequence[Callable[..., Any]]],
             optional: Sequence[str] = ()) -> None:
    """The body the sglang-JIT patches share: retire where the fallback does not serve
    sgl_kernel (:func:`not_served`), else bind ours for each name of ``table`` the target
    module defines (:func:`replacements`: same parameters, or TypeError)."""
    reason = not_served()
    if reason is not None:
        ctx.retire(reason)
    for name, func in replacements(ctx.module, table, optional=optional).items():
        ctx.setattr(ctx.module, name, func)


ROPE: dict[str, Sequence[Callable[..., Any]]] = {
    # 0.5.9's entry point has sgl-kernel's parameters and gets sgl-kernel's function
    "apply_rope_with_cos_sin_cache_inplace": (rope.apply_rope_with_cos_sin_cache_inplace,
                                              apply_rope),
    "rotary_embedding": (rotary_embedding,),
}
"""What the RoPE patches replace in sglang's JIT RoPE module (0.5.9 has no
``rotary_embedding``: optional)."""

ACTIVATION: dict[str, Sequence[Callable[..., Any]]] = {
    "_run_activation_inplace": (run_activation,),
    "_run_activation_filtered_inplace": (run_activation_filtered,),
    "_run_activation_sorted_filtered_inplace": (run_activation_sorted_filtered,),
}
"""What the activation patches replace in sglang's JIT activation module: the two ops
behind ``silu_and_mul``/``gelu_and_mul``/``gelu_tanh_and_mul`` (``run_activation`` looks
them up at each call), and from 0.5.22 the sorted MoE variant (optional)."""
