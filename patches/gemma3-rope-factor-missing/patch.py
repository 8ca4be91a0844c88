"""Let sglang 0.5.12 - 0.5.13.post1 build Gemma 3 models whose global RoPE is unscaled.

``Gemma3TextModel.__init__`` in those releases builds the global rotary table from
``{"rope_theta": ..., "factor": config.rope_parameters["full_attention"]["factor"],
"rope_type": "linear"}``.  Gemma 3 checkpoints without RoPE scaling -- the 1B model,
whose ``full_attention`` entry is ``{"rope_type": "default", "rope_theta": 1e6}`` --
have no ``factor``, so building the model raises ``KeyError: 'factor'`` (sglang issue
26013; 0.5.14 uses the ``full_attention`` entry as it is, PR 27339).

Linear scaling by a factor of 1 is the default RoPE (the inverse frequencies are
divided by 1, the attention factor is 1), so while one ``Gemma3TextModel.__init__``
runs, a ``full_attention`` entry without ``factor`` carries ``factor = 1.0``; the entry
is restored when the call ends.  Entries that have a factor are not touched.
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any

from sglang_shims.patching import PatchContext, argument, temporarily

CLASS = "Gemma3TextModel"


def unscaled_full_attention(config: Any) -> dict[str, Any] | None:
    """The ``full_attention`` RoPE entry when it has no ``factor``; None otherwise."""
    params = getattr(config, "rope_parameters", None)
    full = params.get("full_attention") if isinstance(params, dict) else None
    if not isinstance(full, dict) or "factor" in full:
        return None
    kind = full.get("rope_type", full.get("type", "default"))
    if kind != "default":
        raise ValueError(f"Gemma 3 full-attention RoPE {kind!r} without a factor: "
                         "sglang would build it as linear; refusing to guess")
    return full


def apply(ctx: PatchContext) -> None:
    model = getattr(ctx.module, CLASS)
    config_of = argument(model.__init__, "config")

    def init(wrapped: Any, instance: Any, args: tuple[Any, ...],
             kwargs: dict[str, Any]) -> Any:
        full = unscaled_full_attention(config_of(instance, args, kwargs))
        with nullcontext() if full is None else temporarily(full, {"factor": 1.0}):
            return wrapped(*args, **kwargs)

    ctx.wrap(model, "__init__", init)
