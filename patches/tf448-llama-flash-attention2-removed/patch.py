"""Bind ``LlamaFlashAttention2`` to ``LlamaAttention`` on transformers >= 4.48.

transformers 4.48 merged the per-backend Llama attention classes into one
``LlamaAttention`` that picks eager, SDPA or flash attention from
``config._attn_implementation``; ``LlamaFlashAttention2`` disappeared from
``modeling_llama``.  Remote modeling files written against 4.47 (DeepSeek-OCR's and
DeepSeek-VL2's ``modeling_deepseekv2.py``) still import it, and transformers' dynamic
module loader fails the whole model load on that line (sglang issue 14810).  sglang 0.5.11
answered with the same alias in its own transformers patches; this patch gives it to the
releases before.
"""

from __future__ import annotations

from sglang_shims.patching import PatchContext

NAME = "LlamaFlashAttention2"


def apply(ctx: PatchContext) -> None:
    module = ctx.module
    if NAME in vars(module):
        ctx.retire(f"{module.__name__} defines {NAME}")
    ctx.setattr(module, NAME, module.LlamaAttention)
    ctx.note(f"{module.__name__}.{NAME} bound to LlamaAttention (the class that replaced it)")
