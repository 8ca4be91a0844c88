"""MoE routing (``topk_softmax``) with sgl-kernel's Python signatures.

* sgl-kernel 0.3.18: ``topk_softmax(topk_weights, topk_ids, gating_output,
  renormalize=False, moe_softcapping=0.0, correction_bias=None) -> None``
* sgl-kernel 0.3.5 (what sglang 0.5.1 calls): the same without the last two.
* early sgl-kernel (vLLM's form): ``topk_softmax(topk_weights, topk_ids,
  token_expert_indices, gating_output)``; recognised by a tensor in the fourth
  place, and also available as :func:`topk_softmax_legacy`.

Semantics (as sgl-kernel's CUDA kernel): ``logits`` -> fp32; if ``moe_softcapping``
is non-zero, ``tanh(x / cap) * cap``; plus ``correction_bias`` (fp32, per expert) if
given; softmax over experts; the ``k = topk_weights.shape[1]`` largest probabilities
go to ``topk_weights`` (fp32) and their experts to ``topk_ids`` (int32), largest
first; ``renormalize`` divides the selected weights by their sum.  The weights are
probabilities of the capped and biased logits.

Ties: among equal probabilities the lowest expert index comes first, in both paths
(sgl-kernel's warp kernel does the same; ``torch.topk`` promises no order for ties,
so the plain-PyTorch path uses a stable descending sort instead).

Accepted beyond sgl-kernel: int64 ``topk_ids`` and non-fp32 float ``topk_weights``
(values are cast on store), any row strides.  Expert counts above 8192 run on the
plain-PyTorch path.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from ...compile_lock import launch_kernel
from ...runtime import use_triton
from . import launch

if TYPE_CHECKING:
    import torch

__all__ = ["topk_softmax", "topk_softmax_legacy"]


def topk_softmax(
    topk_weights: torch.Tensor,
    topk_ids: torch.Tensor,
    gating_output: torch.Tensor,
    renormalize: bool = False,
    moe_softcapping: float = 0.0,
    correction_bias: torch.Tensor | None = None,
) -> None:
    """Softmax over experts in fp32, then top-k into ``topk_weights``/``topk_ids``."""
    if _is_tensor(renormalize):
        # The early 4-tensor form: (weights, ids, token_expert_indices, gating_output).
        topk_softmax_legacy(topk_weights, topk_ids, gating_output,
                            cast("torch.Tensor", renormalize))
        return
    topk_softmax_into(topk_weights, topk_ids, gating_output, bool(renormalize),
                      float(moe_softcapping), correction_bias)


def topk_softmax_legacy(
    topk_weights: torch.Tensor,
    topk_ids: torch.Tensor,
    token_expert_indices: torch.Tensor,
    gating_output: torch.Tensor,
) -> None:
    """The early form: no renormalisation; ``token_expert_indices[t, j] = j * T + t``."""
    topk_softmax_into(topk_weights, topk_ids, gating_output, False, 0.0, None,
                      token_expert_indices)


def _is_tensor(obj: object) -> bool:
    return hasattr(obj, "dim") and hasattr(obj, "dtype")


def topk_softmax_into(topk_weights: torch.Tensor, topk_ids: torch.Tensor,
                      gating_output: torch.Tensor, renormalize: bool,
                      moe_softcapping: float = 0.0,
                      correction_bias: torch.Tensor | None = None,
                      token_expert_indices: torch.Tensor | None = None) -> None:
    """The op-level entry point; checks as sgl-kernel does, then runs."""
    _check(topk_weights, topk_ids, gating_output, correction_bias, token_expert_indices)
    if gating_output.shape[0] == 0:
        return
    if use_triton(gating_output) and gating_output.shape[1] <= launch.MAX_EXPERTS:
        _triton(topk_weights, topk_ids, gating_output, renormalize, moe_softcapping,
                correction_bias, token_expert_indices)
    else:
        topk_softmax_torch(topk_weights, topk_ids, gating_output, renormalize,
                           moe_softcapping, correction_bias, token_expert_indices)


def _check(w: torch.Tensor, ids: torch.Tensor, logits: torch.Tensor,
           bias: torch.Tensor | None, tei: torch.Tensor | None) -> None:
    import torch

    if logits.dtype not in (torch.float32, torch.float16, torch.bfloat16):
        raise TypeError(f"topk_softmax: gating_output must be float32, float16, or bfloat16, "
                        f"got {logits.dtype}")
    if logits.dim() != 2 or w.dim() != 2 or ids.dim() != 2:
        raise ValueError("topk_softmax: gating_output, topk_weights and topk_ids must be 2-D")
    if w.shape[0] != logits.shape[0] or ids.shape[0] != logits.shape[0]:
        raise ValueError("topk_softmax: first dimension of topk_weights/topk_ids must match "
                         "num_tokens in gating_output")
    if w.shape[1] != ids.shape[1]:
        raise ValueError("topk_softmax: topk_weights and topk_ids must have the same topk")
    if w.shape[1] > logits.shape[1]:
        raise ValueError("topk_softmax: topk must be less than or equal to num_experts")
    if logits.shape[0] and (logits.shape[1] == 0 or w.shape[1] == 0):
        raise ValueError("topk_softmax: num_experts and topk must be greater than 0")
    if not w.is_floating_point():
        raise TypeError(f"topk_softmax: topk_weights must be a float tensor, got {w.dtype}")
    if ids.dtype not in (torch.int32, torch.int64):
        raise TypeError(f"topk_softmax: topk_ids must be int32 (or int64), got {ids.dtype}")
    if bias is not None and (bias.dim() != 1 or bias.shape[0] != logits.shape[1]
                             or bias.dtype != torch.float32):
        raise ValueError("topk_softmax: correction_bias must be a float32 tensor "
                         f"[num_experts={logits.shape[1]}], got {bias.dtype} "
                         f"{tuple(bias.shape)}")
    if tei is not None and tei.shape != ids.shape:
        raise ValueError("topk_softmax: token_expert_indices must have topk_ids' shape")


def topk_softmax_torch(topk_weights: torch.Tensor, topk_ids: torch.Tensor,
                       gating_output: torch.Tensor, renormalize: bool,
                       moe_softcapping: float = 0.0,
                       correction_bias: torch.Tensor | None = None,
                       token_expert_indices: torch.Tensor | None = None) -> None:
    """Plain-PyTorch path, fp32 arithmetic; used where Triton cannot run."""
    import torch

    k = topk_weights.shape[1]
    x = gating_output.float()
    if moe_softcapping != 0.0:
        x = torch.tanh(x / moe_softcapping) * moe_softcapping
    if correction_bias is not None:
        x = x + correction_bias.float()
    p = torch.softmax(x, dim=-1)
    vals, idx = torch.sort(p, dim=-1, descending=True, stable=True)
    w, ids = vals[:, :k], idx[:, :k]
    if renormalize:
        w = w / w.sum(dim=-1, keepdim=True)
    topk_weights.copy_(w)
    topk_ids.copy_(ids)
    if token_expert_indices is not None:
        n = gating_output.shape[0]
        dev = gating_output.device
        tei = (torch.arange(k, device=dev)[None, :] * n + torch.arange(n, device=dev)[:, None])
        token_expert_indices.copy_(tei)


def _triton(topk_weights: torch.Tensor, topk_ids: torch.Tensor, logits: torch.Tensor,
            renormalize: bool, softcap: float, bias: torch.Tensor | None,
            tei: torch.Tensor | None) -> None:
    from .triton import topk_softmax_kernel

    n_rows, n_experts = logits.shape
    k = topk_weights.shape[1]
    if logits.stride(1) != 1:
        logits = logits.contiguous()
    if bias is not None and bias.stride(0) != 1:
        bias = bias.contiguous()
    outs = []
    for t in (topk_weights, topk_ids, tei):
        outs.append(None if t is None or t.stride(1) == 1 or k == 1
                    else (t, t.new_empty(t.shape)))
    w = topk_weights if outs[0] is None else outs[0][1]
    ids = topk_ids if outs[1] is None else outs[1][1]
    te = tei if outs[2] is None else outs[2][1]
    cfg = launch.config(n_rows, n_experts, k)
    key = ("topk_softmax", logits.dtype, w.dtype, k, cfg["BLOCK_M"], cfg["BLOCK_E"],
           renormalize, softcap != 0.0, bias is None, te is None, cfg["num_warps"])
    launch_kernel(key, topk_softmax_kernel, launch.grid(n_rows, cfg),
                  logits, w, ids, te if te is not None else ids,
                  bias if bias is not None else logits,
                  n_rows, n_experts,
                  logits.stride(0), w.stride(0), ids.stride(0),
                  (te if te is not None else ids).stride(0),
                  float(softcap) if softcap != 0.0 else 1.0,
                  TOPK=k,
                  RENORMALIZE=bool(renormalize),
                  SOFTCAP=softcap != 0.0,
                  HAS_BIAS=bias is not None,
                  HAS_TEI=te is not None,
                  **cfg)
    for pair in outs:
        if pair is not None:
            pair[0].copy_(pair[1])
