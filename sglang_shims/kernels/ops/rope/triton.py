# mypy: disable-error-code="no-untyped-def, untyped-decorator, misc"
"""Triton kernel for rotary position embedding from a cos/sin cache.

Imported only when the RoPE op first runs on the Triton path.  Grid: one token per
program along axis 0; along axis 1, blocks of heads: program ``(t, b)`` rotates query
heads ``[b * Q_HEADS, ...)`` and key heads ``[b * K_HEADS, ...)`` of token ``t`` (block
sizes proportional to the head counts, so with up to ~32 query heads a token is one
program), sharing one cos/sin load.
All arithmetic is fp32; the cache is fp32 (``[max_pos, rotary_dim]``, cos in the
first half of a row, sin in the second).

* Neox style rotates ``x[:r/2]`` against ``x[r/2:r]``; GPT-J (interleaved) style
  rotates ``x[0::2]`` against ``x[1::2]``; pair ``i`` uses ``cos[i]``, ``sin[i]``.
  Interleaved heads are loaded as contiguous rows and split into (even, odd) in
  registers (on an H200 this runs at copy speed; strided even/odd loads ran at ~60%).
* Dimensions ``r..head_size`` are left alone in place, and copied when the output
  is another tensor or when the key is also saved into the KV cache.
* With ``SAVE_KV`` the rotated key and the value of token ``t`` are also written to
  row ``cache_loc[t]`` of the key and value buffers (sgl-kernel's fused set-KV path).
"""

from __future__ import annotations

import triton  # type: ignore[import-not-found, import-untyped, unused-ignore]
import triton.language as tl  # type: ignore[import-not-found, import-untyped, unused-ignore]


@triton.jit
def _copy_cols(src_row, dst_row, src_sh, dst_sh, h, h_ok, start, stop, BLOCK: tl.constexpr):
    """Copy columns [start, stop) of heads ``h`` from one token row to another."""
    for c0 in range(start, stop, BLOCK):
        c = c0 + tl.arange(0, BLOCK)
        m = h_ok[:, None] & (c < stop)[None, :]
        v = tl.load(src_row + h[:, None] * src_sh + c[None, :], mask=m, other=0.0)
        tl.store(dst_row + h[:, None] * dst_sh + c[None, :],
                 v.to(dst_row.dtype.element_ty), mask=m)


@triton.jit
def _rope_heads(
    src_row, dst_row, dst2_row,
    src_sh, dst_sh, dst2_sh,
    h0, n_heads, head_size, half,
    cos, sin,
    INTERLEAVE: tl.constexpr,
    PASS_TO_DST: tl.constexpr,
    HAS_DST2: tl.constexpr,
    HEADS: tl.constexpr,
    HALF_BLOCK: tl.constexpr,
    PASS_BLOCK: tl.constexpr,
):
    """Rotate heads [h0, h0 + HEADS) of one token; each thread loads what it stores."""
    h = h0 + tl.arange(0, HEADS)
    h_ok = h < n_heads
    h = h.to(tl.int64)
    c = cos[None, :]
    s = sin[None, :]
    if INTERLEAVE:
        # One contiguous [HEADS, 2 * HALF_BLOCK] load, split into (even, odd) in registers.
        col = tl.arange(0, 2 * HALF_BLOCK)
        m = h_ok[:, None] & (col < 2 * half)[None, :]
        x = tl.load(src_row + h[:, None] * src_sh + col[None, :], mask=m, other=0.0)
        xe, xo = tl.split(tl.reshape(x.to(tl.float32), (HEADS, HALF_BLOCK, 2)))
        o = tl.reshape(tl.join(xe * c - xo * s, xo * c + xe * s), (HEADS, 2 * HALF_BLOCK))
        tl.store(dst_row + h[:, None] * dst_sh + col[None, :],
                 o.to(dst_row.dtype.element_ty), mask=m)
        if HAS_DST2:
            tl.store(dst2_row + h[:, None] * dst2_sh + col[None, :],
                     o.to(dst2_row.dtype.element_ty), mask=m)
    else:
        i = tl.arange(0, HALF_BLOCK)
        m = h_ok[:, None] & (i < half)[None, :]
        p = src_row + h[:, None] * src_sh + i[None, :]
        x1 = tl.load(p, mask=m, other=0.0).to(tl.float32)
        x2 = tl.load(p + half, mask=m, other=0.0).to(tl.float32)
        o1 = x1 * c - x2 * s
        o2 = x2 * c + x1 * s
        q = dst_row + h[:, None] * dst_sh + i[None, :]
        tl.store(q, o1.to(dst_row.dtype.element_ty), mask=m)
        tl.store(q + half, o2.to(dst_row.dtype.element_ty), mask=m)
        if HAS_DST2:
            q2 = dst2_row + h[:, None] * dst2_sh + i[None, :]
            tl.store(q2, o1.to(dst2_row.dtype.element_ty), mask=m)
            tl.store(q2 + half, o2.to(dst2_row.dtype.element_ty), mask=m)
    if PASS_TO_DST:
        _copy_cols(src_row, dst_row, src_sh, dst_sh, h, h_ok, 2 * half, head_size, PASS_BLOCK)
    if HAS_DST2:
        _copy_cols(src_row, dst2_row, src_sh, dst2_sh, h, h_ok, 2 * half, head_size, PASS_BLOCK)


@triton.jit
def rope_kernel(
    q_ptr, k_ptr, qo_ptr, ko_ptr, cache_ptr, pos_ptr,
    v_ptr, kb_ptr, vb_ptr, loc_ptr,
    n_q_heads, n_k_heads, head_size, rotary_dim,
    sq_t, sq_h, sk_t, sk_h,
    sqo_t, sqo_h, sko_t, sko_h,
    s_cache,
    sv_t, sv_h, skb_t, skb_h, svb_t, svb_h,
    INTERLEAVE: tl.constexpr,
    PASS_TO_DST: tl.constexpr,
    SAVE_KV: tl.constexpr,
    Q_HEADS: tl.constexpr,
    K_HEADS: tl.constexpr,
    HALF_BLOCK: tl.constexpr,
    PASS_BLOCK: tl.constexpr,
    V_BLOCK: tl.constexpr,
):
    """Program (t, b): query heads [b*Q_HEADS, ...) and key heads [b*K_HEADS, ...) of token t."""
    t = tl.program_id(0).to(tl.int64)
    hb = tl.program_id(1)
    half = rotary_dim // 2
    pos = tl.load(pos_ptr + t).to(tl.int64)
    i = tl.arange(0, HALF_BLOCK)
    cache_row = cache_ptr + pos * s_cache
    cos = tl.load(cache_row + i, mask=i < half, other=0.0).to(tl.float32)
    sin = tl.load(cache_row + half + i, mask=i < half, other=0.0).to(tl.float32)
    q0 = hb * Q_HEADS
    if q0 < n_q_heads:
        qo_row = qo_ptr + t * sqo_t
        _rope_heads(q_ptr + t * sq_t, qo_row, qo_row, sq_h, sqo_h, sqo_h,
                    q0, n_q_heads, head_size, half, cos, sin,
                    INTERLEAVE, PASS_TO_DST, False, Q_HEADS, HALF_BLOCK, PASS_BLOCK)
    k0 = hb * K_HEADS
    if k0 < n_k_heads:
        ko_row = ko_ptr + t * sko_t
        if SAVE_KV:
            loc = tl.load(loc_ptr + t).to(tl.int64)
            _rope_heads(k_ptr + t * sk_t, ko_row, kb_ptr + loc * skb_t, sk_h, sko_h, skb_h,
                        k0, n_k_heads, head_size, half, cos, sin,
                        INTERLEAVE, PASS_TO_DST, True, K_HEADS, HALF_BLOCK, PASS_BLOCK)
            h = k0 + tl.arange(0, K_HEADS)
            _copy_cols(v_ptr + t * sv_t, vb_ptr + loc * svb_t, sv_h, svb_h,
                       h.to(tl.int64), h < n_k_heads, 0, head_size, V_BLOCK)
        else:
            _rope_heads(k_ptr + t * sk_t, ko_row, ko_row, sk_h, sko_h, sko_h,
                        k0, n_k_heads, head_size, half, cos, sin,
                        INTERLEAVE, PASS_TO_DST, False, K_HEADS, HALF_BLOCK, PASS_BLOCK)
