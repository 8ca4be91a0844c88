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

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ModelOps", "config_of", "not_called", "ops_for_config", "pinned_surface",
           "provider_of", "served_by"]

_DENSE = ("rmsnorm", "fused_add_rmsnorm", "apply_rope_with_cos_sin_cache_inplace")
_ACTIVATION = {"silu": "silu_and_mul", "swiglu": "silu_and_mul", "gelu": "gelu_and_mul",
               "gelu_pytorch_tanh": "gelu_tanh_and_mul", "gelu_new": "gelu_tanh_and_mul"}
_MOE_SOFTMAX = ("topk_softmax", "moe_align_block_size", "moe_sum_reduce")
_FP8_BLOCK = ("sgl_per_token_group_quant_fp8", "fp8_blockwise_scaled_mm")
_FP8_CHANNEL = ("sgl_per_token_quant_fp8", "sgl_per_tensor_quant_fp8", "fp8_scaled_mm")
UNBOUND = "none: not bound"
""":func:`served_by`'s label for a name the live module does not bind."""
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
        from .. import OPS

        return [op for op in self.ops if op in OPS]

    def missing(self) -> list[str]:
        from .. import OPS

        return [op for op in self.ops if op not in OPS]


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


def config_of(hf_config: Any, quantization: str | None = None) -> dict[str, Any]:
    """A built model config as the ``config.json`` mapping :func:`ops_for_config` reads.

    ``hf_config`` is the ``PretrainedConfig`` sglang loaded (``to_dict()``; a plain object:
    its attributes).  ``quantization`` is the method sglang settled on (``--quantization``
    or the checkpoint's): where it differs from the checkpoint's ``quant_method`` or the
    checkpoint has none (online FP8 of bf16 weights), it is the one that decides the ops.
    """
    to_dict = getattr(hf_config, "to_dict", None)
    raw = to_dict() if callable(to_dict) else dict(vars(hf_config))
    config: dict[str, Any] = dict(raw) if isinstance(raw, Mapping) else {}
    if quantization:
        held = config.get("quantization_config")
        base = dict(held) if isinstance(held, Mapping) else {}
        if str(base.get("quant_method", "")).lower() != quantization.lower():
            config["quantization_config"] = {**base, "quant_method": quantization}
    return config


def provider_of(label: str) -> str:
    """The provider a label of :func:`served_by` (or of the hybrid's ``kernel_ops``) starts
    with: ``real kernel``, ``adapter``, ``ours`` or ``none``."""
    from .hybrid import PROVIDERS

    return next((p for p in PROVIDERS if label.startswith(p)), label)


def served_by(ops: Iterable[str], module: Any,
              table: Mapping[str, str] | None = None) -> dict[str, str]:
    """op -> who serves it in this process, read from the live ``sgl_kernel`` ``module``.

    Why live: only what the module binds now is in effect.  ``table`` is the hybrid tier's
    ``kernel_ops`` (its labels say more: an adapter, half types only); a name it does not
    list is judged from the module: unbound (absent, or only a lazy stand-in its module
    ``__getattr__`` would make) or a stand-in that raises on call is ``none``, one of
    sglang-shims' implementations is ``ours``, anything else the real kernel's.  Nothing
    is looked up through the module's ``__getattr__``, so judging binds nothing.
    """
    from ...engine.proxy import OptionalSymbol
    from .hybrid import NONE, OURS, REAL

    bound = vars(module) if module is not None else {}
    listed = table or {}
    out: dict[str, str] = {}
    for op in ops:
        value = bound.get(op)
        if value is None or isinstance(value, OptionalSymbol):
            said = listed.get(op, "")
            out[op] = said if provider_of(said) == NONE else \
                UNBOUND if value is None else f"{NONE}: raises when called"
        elif op in listed:
            out[op] = listed[op]
        elif str(getattr(value, "__module__", "")).startswith("sglang_shims."):
            out[op] = OURS
        else:
            out[op] = REAL
    return out


def not_called(ops: Iterable[str], sglang: str | None) -> list[str]:
    """The ``ops`` release ``sglang`` never calls from ``sgl_kernel`` (it uses its own
    Triton or torch code instead: ``moe_sum_reduce`` before 0.5.4.post2), read from every
    release's wheel (:mod:`sglang_shims.kernels.surface.opset`).  Why:
    :func:`ops_for_config` is an upper bound over releases, and an op the installed
    release never calls cannot fail it.  A release or an op the data does not cover is
    never dropped (empty answer)."""
    from ..surface import opset

    return [op for op in ops if opset.called(op, sglang) is False]


def pinned_surface(sglang: str | None) -> tuple[str, set[str]] | None:
    """(the kernel release ``sglang`` pins, the names it exports), or None where the data
    knows either not exactly.

    Why: an op the pinned kernel does not export is never called from ``sgl_kernel`` by
    that release on its working path (0.5.18+ run RoPE as their own JIT kernel; their
    pin, sglang-kernel 0.4.10, has no ``apply_rope_with_cos_sin_cache_inplace``), so its
    absence here cannot fail the model either.
    """
    from ..surface import exports, symbols

    pin = symbols.pinned(sglang) if sglang else None
    version = pin.partition("==")[2] if pin else ""
    if exports.entry(version) is None:
        return None
    return pin or version, exports.exported(version)
