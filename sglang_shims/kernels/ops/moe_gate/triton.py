# mypy: disable-error-code="no-untyped-def, untyped-decorator, misc"
"""Triton kernel for ``moe_fused_gate``: grouped top-k with a correction bias, one launch.

Imported only when ``moe_fused_gate`` first runs on the Triton path.  A program holds
``BLOCK_M`` tokens' gating logits as one ``[BLOCK_M, BLOCK_E]`` tile and follows
sgl-kernel's steps (the docstring of ``__init__.py``): sigmoid, plus bias, rounded to the
input dtype as sgl-kernel's ``T`` arithmetic; each group's two largest values summed
(a group of one adds -FLT_MAX, sgl-kernel's "no second value"); ``TOPK_GROUP`` rounds
of "take the best group", then ``ROUTED`` rounds of "take the best expert of the kept
groups", the lowest index winning ties in both, as sgl-kernel; the routed weights'
sum accumulated in selection order, as sgl-kernel's ``output_sum``.
"""

from __future__ import annotations

import triton  # type: ignore[import-not-found, import-untyped, unused-ignore]
import triton.language as tl  # type: ignore[import-not-found, import-untyped, unused-ignore]

from ..shared import load_router_tile

FLT_MAX = tl.constexpr(3.4028234663852886e38)  # a global a kernel reads must be constexpr


@triton.jit(do_not_specialize=["n_rows"])
def moe_fused_gate_kernel(
    x_ptr, bias_ptr, w_ptr, ids_ptr,
    n_rows, n_experts, stride_x,
    routed_scaling_factor,
    GROUPS: tl.constexpr, PER_GROUP: tl.constexpr, TOPK_GROUP: tl.constexpr,
    ROUTED: tl.constexpr, SHARED: tl.constexpr, APPLY_SCALE: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_E: tl.constexpr, G_BLOCK: tl.constexpr,
    K_BLOCK: tl.constexpr,
):
    dtype = x_ptr.dtype.element_ty
    rows64, row_ok, e, e_ok, x = load_router_tile(x_ptr, stride_x, n_rows, n_experts,
                                                   BLOCK_M, BLOCK_E)
    s = (1.0 / (1.0 + tl.exp(-x))).to(dtype).to(tl.float32)
    bias = tl.load(bias_ptr + e, mask=e_ok, other=0.0).to(tl.float32)
    b = (s + bias[None, :]).to(dtype).to(tl.float32)
    b = tl.where(e_ok[None, :], b, -float("inf"))
    group_of = e // PER_GROUP
    gg = tl.arange(0, G_BLOCK)
    scores = tl.full([BLOCK_M, G_BLOCK], -float("inf"), dtype=tl.float32)
    for g in tl.static_range(GROUPS):
        in_g = (group_of == g)[None, :]
        top1 = tl.max(tl.where(in_g, b, -FLT_MAX), axis=1)
        at1 = tl.min(tl.where(in_g & (b == top1[:, None]), e[None, :], BLOCK_E), axis=1)
        top2 = tl.max(tl.where(in_g & (e[None, :] != at1[:, None]), b, -FLT_MAX), axis=1)
        score = (top1 + top2).to(dtype).to(tl.float32)
        scores = tl.where(gg[None, :] == g, score[:, None], scores)
    allowed = tl.zeros([BLOCK_M, BLOCK_E], dtype=tl.int1)
    for _ in tl.static_range(TOPK_GROUP):
        best = tl.max(scores, axis=1)
        pick = tl.min(tl.where(scores == best[:, None], gg[None, :], G_BLOCK), axis=1)
        allowed = allowed | (group_of[None, :] == pick[:, None])
        scores = tl.where(gg[None, :] == pick[:, None], -float("inf"), scores)
    candidates = tl.where(allowed & e_ok[None, :], b, -float("inf"))
    kk = tl.arange(0, K_BLOCK)
    wts = tl.zeros([BLOCK_M, K_BLOCK], dtype=tl.float32)
    ids = tl.zeros([BLOCK_M, K_BLOCK], dtype=tl.int32)
    total = tl.zeros([BLOCK_M], dtype=tl.float32)
    for j in tl.static_range(ROUTED):
        best = tl.max(candidates, axis=1)
        idx = tl.min(tl.where(candidates == best[:, None], e[None, :], BLOCK_E), axis=1)
        weight = tl.sum(tl.where(e[None, :] == idx[:, None], s, 0.0), axis=1)
        total += weight
        wts = tl.where(kk[None, :] == j, weight[:, None], wts)
        ids = tl.where(kk[None, :] == j, idx[:, None], ids)
        candidates = tl.where(e[None, :] == idx[:, None], -float("inf"), candidates)
    for i in tl.static_range(SHARED):
        wts = tl.where(kk[None, :] == ROUTED + i, (total / routed_scaling_factor)[:, None], wts)
        ids = tl.where(kk[None, :] == ROUTED + i, n_experts + i, ids)
    wts = wts / total[:, None]
    if APPLY_SCALE:
        wts = wts * routed_scaling_factor
    k_total: tl.constexpr = ROUTED + SHARED
    mk = row_ok[:, None] & (kk < k_total)[None, :]
    tl.store(w_ptr + rows64[:, None] * k_total + kk[None, :], wts, mask=mk)
    tl.store(ids_ptr + rows64[:, None] * k_total + kk[None, :], ids, mask=mk)
