"""Let transformers 5 tie the weights of sglang's multimodal Gemma 3n.

transformers 5's ``PreTrainedModel.init_weights`` -- run by ``post_init``, at the end of
every model's constructor -- calls ``self.tie_weights(recompute_mapping=False)``.
``Gemma3nForConditionalGeneration.tie_weights`` in sglang 0.4.8.post1 - 0.5.13.post1
takes no arguments (``return self.language_model.tie_weights()``), so constructing the
model raises TypeError, on any transformers 5 -- including the ones sglang 0.5.10 -
0.5.13.post1 pin.  sglang 0.5.14 accepts the keyword arguments and passes them on to the
language model (PR 27339); the wrapper does the same.
"""

from __future__ import annotations

from typing import Any

from sglang_shims.patching import PatchContext

CLASS = "Gemma3nForConditionalGeneration"


def apply(ctx: PatchContext) -> None:
    cls = getattr(ctx.module, CLASS)

    def tie_weights(wrapped: Any, instance: Any, args: tuple[Any, ...],
                    kwargs: dict[str, Any]) -> Any:
        if not args and not kwargs:
            return wrapped()
        return instance.language_model.tie_weights(*args, **kwargs)

    ctx.wrap(cls, "tie_weights", tie_weights)
