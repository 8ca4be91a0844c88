"""``moe_fused_gate``: DeepSeek-style grouped top-k routing with a correction bias.

sglang's ``biased_grouped_topk_gpu`` (``layers/moe/topk.py``, 0.5.1 to 0.5.15.post1) calls
``moe_fused_gate(gating_output.float(), correction_bias, num_expert_group, topk_group,
topk, num_fused_shared_experts, routed_scaling_factor,
apply_routed_scaling_factor_on_output)`` on CUDA when the experts per group are at most
32 and the expert count is a power of two (DeepSeek V3/R1, Kimi K2).  It returns
``(topk_weights float32 [T, topk], topk_ids int32 [T, topk])``, computed as sgl-kernel
0.3.x does:

1. ``s = sigmoid(x)`` and ``b = s + bias`` in the input's dtype;
2. each group's score is the sum of its two largest ``b``; the ``topk_group`` best
   groups are kept (on equal scores the lower group index wins);
3. the ``topk - num_fused_shared_experts`` largest ``b`` of the kept groups are chosen
   in descending order (equal values: the lower expert index first); their weights
   are the unbiased ``s``;
4. the last ``num_fused_shared_experts`` slots name the shared experts
   ``num_experts + i`` with weight ``sum / routed_scaling_factor``;
5. every weight is divided by the routed weights' sum (always renormalised), then
   multiplied by ``routed_scaling_factor`` when ``apply_routed_scaling_factor_on_output``.

Why not sglang's own ``biased_grouped_topk_impl``: it is what sglang runs where the
kernel does not apply, but it is not the same function -- it picks the shared expert
at random, renormalises only when asked, leaves the order of equal scores to
``torch.topk``, and is wrapped in ``torch.compile`` (a compile on first call).  So this
is written here: one Triton kernel (``triton.py``), and plain torch (stable
sorts) for CPU tensors or without Triton.

Refused loudly: an expert count not divisible by the group count, more routed picks than
the kept groups hold, and what newer kernels added (``renormalize``, ``scoring_func``, a
``None`` bias; in the wheels, sglang 0.5.16+ passes them only on its XPU paths: on CUDA
it calls its own Triton gate from 0.5.16 and the 8-argument form before): only the
values that mean the 0.3.x routing above are accepted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from ...compile_lock import launch_kernel
from ...runtime import use_triton
from . import launch

if TYPE_CHECKING:
    import torch

__all__ = ["moe_fused_gate"]

_LOWEST = -3.4028234663852886e38  # -FLT_MAX: sgl-kernel's "no second value" in a group


def moe_fused_gate(input_tensor: torch.Tensor, bias: torch.Tensor, num_expert_group: int,
                   topk_group: int, topk: int, num_fused_shared_experts: int = 0,
                   routed_scaling_factor: float = 0,
                   apply_routed_scaling_factor_on_output: bool = False, *,
                   renormalize: bool = True, scoring_func: str = "sigmoid"
                   ) -> tuple[torch.Tensor, torch.Tensor]:
    """Grouped top-k over sigmoid scores plus ``bias``; returns (weights, ids)."""
    import torch

    name = "moe_fused_gate"
    if isinstance(num_fused_shared_experts, bool) or isinstance(cast(object,
                                                                      routed_scaling_factor), str):
        raise TypeError(f"{name}: called with newer sgl-kernel's argument order (renormalize, "
                        "scoring_func as the 6th and 7th); the fallback takes the 0.3.x order "
                        "and these two as keywords")
    if not renormalize or scoring_func != "sigmoid" or bias is None:
        raise NotImplementedError(
            f"{name}: renormalize={renormalize}, scoring_func={scoring_func!r}, bias="
            f"{'None' if bias is None else 'given'}: only sgl-kernel 0.3.x's routing (sigmoid "
            "scores, a correction bias, always renormalised) is implemented by sglang-shims' "
            "fallback kernels")
    if input_tensor.dim() != 2 or bias.shape != input_tensor.shape[1:]:
        raise ValueError(f"{name}: input must be [tokens, experts] and bias [experts], got "
                         f"{list(input_tensor.shape)} and {list(bias.shape)}")
    if input_tensor.dtype != bias.dtype or not input_tensor.is_floating_point():
        raise TypeError(f"{name}: input and bias must have the same floating dtype, got "
                        f"{input_tensor.dtype} and {bias.dtype}")
    tokens, experts = input_tensor.shape
    groups, shared = int(num_expert_group), int(num_fused_shared_experts)
    routed = int(topk) - shared
    if groups <= 0 or experts % groups or not 0 < topk_group <= groups:
        raise ValueError(f"{name}: {experts} experts cannot form {groups} groups with "
                         f"topk_group={topk_group}")
    per_group = experts // groups
    if not 0 < routed <= topk_group * per_group or shared < 0:
        raise ValueError(f"{name}: topk={topk} with {shared} shared experts does not fit "
                         f"{topk_group} groups of {per_group} experts")
    if use_triton(input_tensor) and tokens:
        return _triton(input_tensor, bias, groups, int(topk_group), routed, shared,
                       float(routed_scaling_factor), bool(apply_routed_scaling_factor_on_output))
    dtype = input_tensor.dtype
    scores = torch.sigmoid(input_tensor.float()).to(dtype)
    biased = scores + bias  # in the input dtype, as sgl-kernel
    grouped = biased.view(tokens, groups, per_group)
    if per_group >= 2:
        top2 = grouped.topk(2, dim=-1).values
        group_score = top2[..., 0] + top2[..., 1]
    else:
        group_score = grouped[..., 0] + _LOWEST
    # stable descending sorts: on equal values the lower index comes first
    kept = torch.sort(group_score, dim=-1, descending=True, stable=True).indices[:, :topk_group]
    allowed = torch.zeros(tokens, groups, dtype=torch.bool, device=biased.device)
    allowed.scatter_(1, kept, True)
    candidates = biased.masked_fill(~allowed.repeat_interleave(per_group, dim=1),
                                    float("-inf"))
    ids = torch.sort(candidates, dim=-1, descending=True, stable=True).indices[:, :routed]
    weights = scores.gather(1, ids).float()
    total = weights.sum(dim=-1, keepdim=True)
    if shared:
        shared_ids = torch.arange(experts, experts + shared, device=ids.device)
        ids = torch.cat([ids, shared_ids.expand(tokens, shared)], dim=1)
        weights = torch.cat([weights, (total / routed_scaling_factor).expand(tokens, shared)],
                            dim=1)
    weights = weights / total
    if apply_routed_scaling_factor_on_output:
        weights = weights * routed_scaling_factor
    return weights, ids.to(torch.int32)


def _triton(x: torch.Tensor, bias: torch.Tensor, groups: int, topk_group: int, routed: int,
            shared: int, factor: float, apply_scale: bool
            ) -> tuple[torch.Tensor, torch.Tensor]:
    import torch

    from .triton import moe_fused_gate_kernel

    tokens, experts = x.shape
    if x.stride(1) != 1:
        x = x.contiguous()
    bias = bias.contiguous()
    k = routed + shared
    weights = torch.empty((tokens, k), dtype=torch.float32, device=x.device)
    ids = torch.empty((tokens, k), dtype=torch.int32, device=x.device)
    cfg = launch.config(tokens, experts, groups, k)
    key = ("moe_fused_gate", x.dtype, groups, topk_group, routed, shared, apply_scale,
           cfg["BLOCK_M"], cfg["BLOCK_E"])
    launch_kernel(key, moe_fused_gate_kernel, launch.grid(tokens, cfg),
                  x, bias, weights, ids, tokens, experts, x.stride(0), factor,
                  GROUPS=groups, PER_GROUP=experts // groups, TOPK_GROUP=topk_group,
                  ROUTED=routed, SHARED=shared, APPLY_SCALE=apply_scale, **cfg)
    return weights, ids
