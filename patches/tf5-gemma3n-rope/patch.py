"""Let sglang's Gemma 3n attention layers read transformers 5's per-layer RoPE settings.

``Gemma3nAttention.__init__`` (``sglang/srt/models/gemma3n_causal.py``, 0.4.8.post1 -
0.5.13.post1) builds each layer's rotary embedding from transformers 4 names:
``config.rope_local_base_freq`` for sliding-window layers and, for full-attention ones,
``config.rope_theta`` / ``config.rope_scaling`` (up to 0.5.9) or
``config.rope_parameters["rope_theta"]`` as a flat dict (0.5.10 - 0.5.13.post1).
transformers 5 keeps them per layer type, in
``rope_parameters = {"sliding_attention": {...}, "full_attention": {...}}``, and has no
``rope_local_base_freq``: building the first layer fails with AttributeError -- on
sglang 0.5.10 - 0.5.13.post1 with the transformers they pin (sglang PR 27339 fixed it).

While one ``Gemma3nAttention.__init__`` runs, the config instance shows the v4 layout:
``rope_parameters`` is the full-attention dict (type ``default`` unless it says
otherwise), ``rope_local_base_freq`` the sliding-window base and ``rope_theta`` the
full-attention base; the instance's own values come back when it returns, whether it
returns or raises.  The layers get the bases transformers 4 gave them.
``Gemma3nForCausalLM._tied_weights_keys``, a v4 list, becomes the empty mapping
transformers 5 reads in ``post_init`` (there is no ``lm_head`` to tie).
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any

from sglang_shims.patching import PatchContext, argument, temporarily, tie_nothing

CLASS = "Gemma3nAttention"


def v4_view(config: Any) -> dict[str, Any] | None:
    """The v4 attribute values for a v5 per-layer-type config; None for any other."""
    params = vars(config).get("rope_parameters") if hasattr(config, "__dict__") else None
    if not isinstance(params, dict):
        return None
    full, sliding = params.get("full_attention"), params.get("sliding_attention")
    if not isinstance(full, dict) or not isinstance(sliding, dict):
        return None
    if full.get("rope_theta") is None or sliding.get("rope_theta") is None:
        raise ValueError(f"Gemma 3n rope_parameters without a rope_theta per layer type: "
                         f"{params!r}")
    flat = {"rope_type": "default", **full}
    return {"rope_parameters": flat, "rope_theta": full["rope_theta"],
            "rope_local_base_freq": sliding["rope_theta"]}


def apply(ctx: PatchContext) -> None:
    attention = getattr(ctx.module, CLASS)
    config_of = argument(attention.__init__, "config")

    def init(wrapped: Any, instance: Any, args: tuple[Any, ...],
             kwargs: dict[str, Any]) -> Any:
        config = config_of(instance, args, kwargs)
        values = v4_view(config)
        with nullcontext() if values is None else temporarily(config, values):
            return wrapped(*args, **kwargs)

    ctx.wrap(attention, "__init__", init)
    tie_nothing(ctx, getattr(ctx.module, "Gemma3nForCausalLM", None))
