# mypy: disable-error-code="no-untyped-def, untyped-decorator, misc"
"""Triton kernel for MoE routing: softmax over experts, then top-k, in one launch.

Imported only when ``topk_softmax`` first runs on the Triton path.  A program holds
``BLOCK_M`` tokens' logits as one ``[BLOCK_M, BLOCK_E]`` fp32 tile: optional tanh
soft-capping and per-expert bias, a max-shifted softmax, then ``TOPK`` rounds of
"take the row maximum, blank it out".  Among equal probabilities the lowest expert
index wins (sgl-kernel's warp kernel breaks ties the same way).  Renormalisation
divides the selected weights by their sum before the single store.
"""

from __future__ import annotations

import triton  # type: ignore[import-not-found, import-untyped, unused-ignore]
import triton.language as tl  # type: ignore[import-not-found, import-untyped, unused-ignore]

from ..shared import load_router_tile


@triton.jit
def _tanh_f32(x):
    e = tl.exp(-2.0 * tl.abs(x))
    t = (1.0 - e) / (1.0 + e)
    return tl.where(x < 0.0, -t, t)


@triton.jit(do_not_specialize=["n_rows"])
def topk_softmax_kernel(
    logits_ptr, w_ptr, ids_ptr, tei_ptr, bias_ptr,
    n_rows, n_experts,
    stride_l, stride_w, stride_ids, stride_tei,
    softcap,
    TOPK: tl.constexpr,
    K_BLOCK: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_E: tl.constexpr,
    RENORMALIZE: tl.constexpr,
    SOFTCAP: tl.constexpr,
    HAS_BIAS: tl.constexpr,
    HAS_TEI: tl.constexpr,
):
    rows64, row_ok, e, e_ok, x = load_router_tile(logits_ptr, stride_l, n_rows, n_experts,
                                                   BLOCK_M, BLOCK_E)
    if SOFTCAP:
        x = _tanh_f32(x / softcap) * softcap
    if HAS_BIAS:
        x += tl.load(bias_ptr + e, mask=e_ok, other=0.0).to(tl.float32)[None, :]
    x = tl.where(e_ok[None, :], x, float("-inf"))
    p = tl.exp(x - tl.max(x, axis=1)[:, None])
    p = p / tl.sum(p, axis=1)[:, None]
    # Probabilities are >= 0: -1 marks padding columns, -2 experts already taken.
    p = tl.where(e_ok[None, :], p, -1.0)
    kk = tl.arange(0, K_BLOCK)
    wts = tl.zeros([BLOCK_M, K_BLOCK], dtype=tl.float32)
    ids = tl.zeros([BLOCK_M, K_BLOCK], dtype=tl.int32)
    for j in tl.static_range(TOPK):
        best = tl.max(p, axis=1)
        idx = tl.min(tl.where(p == best[:, None], e[None, :], BLOCK_E), axis=1)
        wts = tl.where(kk[None, :] == j, best[:, None], wts)
        ids = tl.where(kk[None, :] == j, idx[:, None], ids)
        p = tl.where(e[None, :] == idx[:, None], -2.0, p)
    if RENORMALIZE:
        wts = wts / tl.sum(wts, axis=1)[:, None]
    mk = row_ok[:, None] & (kk < TOPK)[None, :]
    tl.store(w_ptr + rows64[:, None] * stride_w + kk[None, :],
             wts.to(w_ptr.dtype.element_ty), mask=mk)
    tl.store(ids_ptr + rows64[:, None] * stride_ids + kk[None, :],
             ids.to(ids_ptr.dtype.element_ty), mask=mk)
    if HAS_TEI:
        # vLLM's layout: entry (t, j) holds j * n_rows + t.
        tei = kk[None, :].to(tl.int64) * n_rows + rows64[:, None]
        tl.store(tei_ptr + rows64[:, None] * stride_tei + kk[None, :],
                 tei.to(tei_ptr.dtype.element_ty), mask=mk)
