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

import inspect
from typing import Any

from sglang_shims.patching import PatchContext

CLASS = "Gemma3TextModel"


def apply(ctx: PatchContext) -> None:
    model = getattr(ctx.module, CLASS)
    signature = inspect.signature(vars(model)["__init__"])
    if "config" not in signature.parameters:
        raise RuntimeError(f"{CLASS}.__init__ takes no 'config'; nothing safe to do")

    def init(wrapped: Any, instance: Any, args: tuple[Any, ...],
             kwargs: dict[str, Any]) -> Any:
        config = signature.bind(instance, *args, **kwargs).arguments["config"]
        params = getattr(config, "rope_parameters", None)
        full = params.get("full_attention") if isinstance(params, dict) else None
        if not isinstance(full, dict) or "factor" in full:
            return wrapped(*args, **kwargs)
        kind = full.get("rope_type", full.get("type", "default"))
        if kind != "default":
            raise ValueError(f"Gemma 3 full-attention RoPE {kind!r} without a factor: "
                             "sglang would build it as linear; refusing to guess")
        full["factor"] = 1.0
        try:
            return wrapped(*args, **kwargs)
        finally:
            full.pop("factor", None)

    ctx.wrap(model, "__init__", init)
