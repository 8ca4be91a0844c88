"""Which ``sgl_kernel`` ops a model's forward reaches on CUDA, and which the fallback has.

Why: the Triton fallback implements part of ``sgl_kernel``; every other name is a
stand-in that raises when called, so a model whose forward reaches one starts and then
fails on its first request.  This answers, from the model's ``config.json`` alone (no
torch, no sglang import), which ops that will be and whether the fallback provides each,
so ``sglang-shims doctor --model-path`` can say it before the server starts.

The mapping from config to ops is read from sglang's code paths (docs/fallback-ops.md
gives the evidence per release): every model needs the RMSNorm family, its gated
activation and RoPE; an MoE with softmax routing adds ``topk_softmax``,
``moe_align_block_size`` and ``moe_sum_reduce``; grouped routing with a correction bias
(DeepSeek V3 style, ``topk_method: noaux_tc``) adds ``moe_fused_gate``; FP8 with
128x128 block scales adds per-group quantisation and ``fp8_blockwise_scaled_mm``
(CUTLASS, sglang's automatic choice on Hopper); other FP8 checkpoints add per-token or
per-tensor quantisation and ``fp8_scaled_mm`` (per-channel weight scales).  It is an
upper bound: sglang takes some of these only on some GPUs or settings.  Quantisation
methods other than FP8 use kernels outside the fallback's scope and are reported as
such, not guessed at.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ModelOps", "ops_for_config"]

_DENSE = ("rmsnorm", "fused_add_rmsnorm", "apply_rope_with_cos_sin_cache_inplace")
_ACTIVATION = {"silu": "silu_and_mul", "swiglu": "silu_and_mul", "gelu": "gelu_and_mul",
               "gelu_pytorch_tanh": "gelu_tanh_and_mul", "gelu_new": "gelu_tanh_and_mul"}
_MOE_SOFTMAX = ("topk_softmax", "moe_align_block_size", "moe_sum_reduce")
_FP8_BLOCK = ("sgl_per_token_group_quant_fp8", "fp8_blockwise_scaled_mm")
_FP8_CHANNEL = ("sgl_per_token_quant_fp8", "sgl_per_tensor_quant_fp8", "fp8_scaled_mm")
_EXPERT_KEYS = ("num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts")


@dataclass
class ModelOps:
    """The families a config belongs to, the ops they reach and what is out of scope."""

    families: list[str] = field(default_factory=list)
    ops: dict[str, str] = field(default_factory=dict)
    """op -> the family that reaches it, in the order they are found."""
    unsupported: list[str] = field(default_factory=list)
    """What the fallback does not cover at all (a quantisation method), said in words."""

    def provided(self) -> list[str]:
        from . import _WHERE

        return [op for op in self.ops if op in _WHERE]

    def missing(self) -> list[str]:
        from . import _WHERE

        return [op for op in self.ops if op not in _WHERE]


def ops_for_config(config: Mapping[str, Any]) -> ModelOps:
    """The ops a model with this ``config.json`` reaches (multimodal configs: their
    ``text_config``)."""
    text = config.get("text_config")
    cfg: Mapping[str, Any] = text if isinstance(text, Mapping) else config
    result = ModelOps()

    def add(family: str, ops: tuple[str, ...]) -> None:
        result.families.append(family)
        for op in ops:
            result.ops.setdefault(op, family)

    act = str(cfg.get("hidden_act") or cfg.get("hidden_activation") or "silu")
    add("dense", (*_DENSE, _ACTIVATION.get(act, "silu_and_mul")))
    experts = next((cfg[k] for k in _EXPERT_KEYS if isinstance(cfg.get(k), int)), 0)
    if experts > 1:
        if cfg.get("topk_method") == "noaux_tc" or (cfg.get("n_group") and
                                                    cfg.get("scoring_func") == "sigmoid"):
            add("MoE, grouped top-k with correction bias", ("moe_fused_gate",
                                                            *_MOE_SOFTMAX[1:]))
        else:
            add("MoE, softmax routing", _MOE_SOFTMAX)
    quant = config.get("quantization_config") or cfg.get("quantization_config")
    if isinstance(quant, Mapping):
        method = str(quant.get("quant_method", "")).lower()
        if method == "fp8":
            if quant.get("weight_block_size"):
                add("FP8, 128x128 block scales", _FP8_BLOCK)
            else:
                add("FP8, per-tensor or per-channel scales", _FP8_CHANNEL)
        elif method:
            result.unsupported.append(
                f"quantization {method!r}: its kernels (sgl_kernel's or other libraries') are "
                "outside the fallback's op set")
    return result
