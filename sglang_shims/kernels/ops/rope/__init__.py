"""Rotary embedding with sgl-kernel's Python signature (sgl-kernel 0.3.18; 0.3.5 lacks
``enable_pdl``).

``apply_rope_with_cos_sin_cache_inplace(positions, query, key, head_size,
cos_sin_cache, is_neox=True, fused_set_kv_buffer_arg=None, enable_pdl=None) -> None``

``query`` is ``[tokens, q_heads * head_size]`` (or already ``[tokens, q_heads,
head_size]``), ``key`` likewise; both are rotated in place.  Rows may be strided
(``q``/``k`` split out of a fused ``qkv`` projection), the last dimension must be
contiguous, as in sgl-kernel.  ``cos_sin_cache`` is fp32 ``[max_pos, rotary_dim]``
with cos in the first half of each row and sin in the second; ``rotary_dim`` may be
smaller than ``head_size`` (partial rotary: the rest of each head is left as is).
``is_neox=False`` selects GPT-J (interleaved pairs).  Arithmetic is fp32.

``fused_set_kv_buffer_arg`` (sgl-kernel >= 0.3.5) is supported as sgl-kernel does it:
after rotation, ``k_buffer[cache_loc[t]] = key[t]`` and ``v_buffer[cache_loc[t]] =
value[t]``, in the same launch.  Its ``k_scale``/``v_scale`` must be ``None`` (sgl-kernel
asserts the same) and ``cache_loc`` int64; anything else raises, with the reason.
``enable_pdl`` is accepted and ignored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...compile_lock import launch_kernel
from ...runtime import same_memory, use_triton
from . import launch

if TYPE_CHECKING:
    import torch

__all__ = ["FusedSetKVBufferArg", "apply_rope_with_cos_sin_cache_inplace"]


@dataclass
class FusedSetKVBufferArg:
    """Same fields as ``sgl_kernel.elementwise.FusedSetKVBufferArg``; any object with
    these attributes is accepted, sgl-kernel's own dataclass included."""

    value: torch.Tensor
    k_buffer: torch.Tensor
    v_buffer: torch.Tensor
    k_scale: float | None
    v_scale: float | None
    cache_loc: torch.Tensor


def apply_rope_with_cos_sin_cache_inplace(
    positions: torch.Tensor,
    query: torch.Tensor,
    key: torch.Tensor,
    head_size: int,
    cos_sin_cache: torch.Tensor,
    is_neox: bool = True,
    fused_set_kv_buffer_arg: Any | None = None,
    enable_pdl: bool | None = None,
) -> None:
    """Rotate ``query`` and ``key`` in place by the cached cos/sin at ``positions``."""
    import torch

    if cos_sin_cache.dtype != torch.float32:
        raise ValueError("cos_sin_cache should be float32")
    a = fused_set_kv_buffer_arg
    v3 = kb3 = vb3 = loc = None
    if a is not None:
        if a.k_scale is not None or a.v_scale is not None:
            raise NotImplementedError(
                "apply_rope_with_cos_sin_cache_inplace: fused_set_kv_buffer_arg with k_scale or "
                "v_scale is not supported (sgl-kernel rejects it too); pass None and scale "
                "outside")
        if a.cache_loc.dtype != torch.int64:
            raise ValueError(f"fused_set_kv_buffer_arg.cache_loc must be int64, got "
                             f"{a.cache_loc.dtype}")
        v3, kb3, vb3 = (_view_3d(t, head_size) for t in (a.value, a.k_buffer, a.v_buffer))
        loc = a.cache_loc
    q3 = _view_3d(query, head_size)
    k3 = _view_3d(key, head_size)
    rope_into(q3, k3, q3, k3, cos_sin_cache, positions, not is_neox, v3, kb3, vb3, loc)


def _view_3d(x: torch.Tensor, head_size: int) -> torch.Tensor:
    return x.view(x.shape[0], -1, head_size)


def rope_into(q: torch.Tensor, k: torch.Tensor, q_rope: torch.Tensor, k_rope: torch.Tensor,
              cos_sin_cache: torch.Tensor, pos_ids: torch.Tensor, interleave: bool,
              v: torch.Tensor | None = None, k_buffer: torch.Tensor | None = None,
              v_buffer: torch.Tensor | None = None,
              cache_loc: torch.Tensor | None = None) -> None:
    """The op-level entry point (sgl-kernel's ``apply_rope_pos_ids_cos_sin_cache``).

    ``q``/``k`` are ``[tokens, heads, head_size]``; the results go to ``q_rope``/
    ``k_rope`` (the same tensors for the in-place API).  With ``v`` given, the rotated
    key and ``v`` are also stored at rows ``cache_loc`` of ``k_buffer``/``v_buffer``.
    """
    _check(q, k, q_rope, k_rope, cos_sin_cache, pos_ids, v, k_buffer, v_buffer, cache_loc)
    if q.shape[0] == 0:
        return
    if use_triton(q):
        _triton(q, k, q_rope, k_rope, cos_sin_cache, pos_ids, interleave,
                v, k_buffer, v_buffer, cache_loc)
    else:
        rope_torch(q, k, q_rope, k_rope, cos_sin_cache, pos_ids, interleave,
                   v, k_buffer, v_buffer, cache_loc)


def _check(q: torch.Tensor, k: torch.Tensor, q_rope: torch.Tensor, k_rope: torch.Tensor,
           cache: torch.Tensor, pos: torch.Tensor, v: torch.Tensor | None,
           k_buffer: torch.Tensor | None, v_buffer: torch.Tensor | None,
           loc: torch.Tensor | None) -> None:
    name = "apply_rope"
    if q.dim() != 3 or k.dim() != 3:
        raise ValueError(f"{name}: q and k must be [tokens, heads, head_size], got "
                         f"{tuple(q.shape)} and {tuple(k.shape)}")
    if q_rope.shape != q.shape or k_rope.shape != k.shape:
        raise ValueError(f"{name}: q_rope/k_rope must have the shapes of q/k")
    if q.shape[0] != k.shape[0] or q.shape[2] != k.shape[2]:
        raise ValueError(f"{name}: q {tuple(q.shape)} and k {tuple(k.shape)} disagree")
    if pos.dim() != 1 or pos.shape[0] != q.shape[0]:
        raise ValueError(f"{name}: positions must be [tokens={q.shape[0]}], got "
                         f"{tuple(pos.shape)}")
    if pos.is_floating_point() or pos.is_complex():
        raise ValueError(f"{name}: positions must be integers, got {pos.dtype}")
    if cache.dim() != 2 or cache.shape[1] % 2 or cache.shape[1] > q.shape[2]:
        raise ValueError(f"{name}: cos_sin_cache must be [max_pos, rotary_dim] with an even "
                         f"rotary_dim <= head_size={q.shape[2]}, got {tuple(cache.shape)}")
    for t in (q, k, q_rope, k_rope):
        if t.stride(2) != 1 and t.shape[2] > 1:
            raise ValueError(f"{name}: the last dimension of q, k and outputs must be "
                             "contiguous")
    if v is not None:
        if k_buffer is None or v_buffer is None or loc is None:
            raise ValueError(f"{name}: v needs k_buffer, v_buffer and kv_cache_loc")
        if v.dim() != 3 or v.shape[0] != q.shape[0] or v.shape[1] != k.shape[1]:
            raise ValueError(f"{name}: v must be [tokens, k_heads={k.shape[1]}, head_size], "
                             f"got {tuple(v.shape)}")
        for buf in (k_buffer, v_buffer):
            if buf.dim() != 3 or buf.shape[1:] != k.shape[1:]:
                raise ValueError(f"{name}: KV buffers must be [slots, {k.shape[1]}, "
                                 f"{k.shape[2]}], got {tuple(buf.shape)}")
        if loc.dim() != 1 or loc.shape[0] != q.shape[0]:
            raise ValueError(f"{name}: kv_cache_loc must be [tokens], got {tuple(loc.shape)}")
    elif k_buffer is not None or v_buffer is not None or loc is not None:
        raise ValueError(f"{name}: k_buffer, v_buffer and kv_cache_loc need v")


def rope_torch(q: torch.Tensor, k: torch.Tensor, q_rope: torch.Tensor, k_rope: torch.Tensor,
               cos_sin_cache: torch.Tensor, pos_ids: torch.Tensor, interleave: bool,
               v: torch.Tensor | None = None, k_buffer: torch.Tensor | None = None,
               v_buffer: torch.Tensor | None = None,
               cache_loc: torch.Tensor | None = None) -> None:
    """Plain-PyTorch path, fp32 arithmetic; used where Triton cannot run."""
    import torch

    rd = cos_sin_cache.shape[1]
    half = rd // 2
    cs = cos_sin_cache.index_select(0, pos_ids.long()).float()
    cos, sin = cs[:, None, :half], cs[:, None, half:]
    results = []
    for src in (q, k):
        xf = src.float()
        rot = xf[..., :rd]
        if interleave:
            x1, x2 = rot[..., 0::2], rot[..., 1::2]
        else:
            x1, x2 = rot[..., :half], rot[..., half:]
        o1 = x1 * cos - x2 * sin
        o2 = x2 * cos + x1 * sin
        new = torch.stack((o1, o2), -1).flatten(-2) if interleave else torch.cat((o1, o2), -1)
        results.append(torch.cat((new, xf[..., rd:]), -1))
    q_rope.copy_(results[0])
    k_rope.copy_(results[1])
    if v is not None and k_buffer is not None and v_buffer is not None and cache_loc is not None:
        idx = cache_loc.long()
        k_buffer.index_copy_(0, idx, results[1].to(k_buffer.dtype))
        v_buffer.index_copy_(0, idx, v.to(v_buffer.dtype))


def _triton(q: torch.Tensor, k: torch.Tensor, q_rope: torch.Tensor, k_rope: torch.Tensor,
            cache: torch.Tensor, pos: torch.Tensor, interleave: bool,
            v: torch.Tensor | None, kb: torch.Tensor | None, vb: torch.Tensor | None,
            loc: torch.Tensor | None) -> None:
    from .triton import rope_kernel

    n_tokens, n_q, head_size = q.shape
    n_k = k.shape[1]
    rotary_dim = cache.shape[1]
    cfg = launch.config(n_q, n_k, head_size, rotary_dim)
    save = v is not None
    if cache.stride(1) != 1:
        cache = cache.contiguous()
    pass_to_dst = rotary_dim < head_size and not (same_memory(q, q_rope)
                                                  and same_memory(k, k_rope))
    dummy = q
    vv = v if v is not None else dummy
    kbb = kb if kb is not None else dummy
    vbb = vb if vb is not None else dummy
    locc = loc if loc is not None else pos
    key = ("rope", q.dtype, q_rope.dtype, cache.dtype, interleave, pass_to_dst, save,
           cfg["Q_HEADS"], cfg["K_HEADS"], cfg["HALF_BLOCK"], cfg["PASS_BLOCK"], cfg["V_BLOCK"],
           cfg["num_warps"])
    launch_kernel(key, rope_kernel, launch.grid(n_tokens, n_q, n_k, cfg),
                  q, k, q_rope, k_rope, cache, pos,
                  vv, kbb, vbb, locc,
                  n_q, n_k, head_size, rotary_dim,
                  q.stride(0), q.stride(1), k.stride(0), k.stride(1),
                  q_rope.stride(0), q_rope.stride(1), k_rope.stride(0), k_rope.stride(1),
                  cache.stride(0),
                  vv.stride(0), vv.stride(1), kbb.stride(0), kbb.stride(1), vbb.stride(0),
                  vbb.stride(1),
                  INTERLEAVE=bool(interleave),
                  PASS_TO_DST=pass_to_dst,
                  SAVE_KV=save,
                  **cfg)
