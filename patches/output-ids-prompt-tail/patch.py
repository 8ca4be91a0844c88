"""Give sglang's ``output_ids`` only the generated tokens, as sglang 0.5.4.post3 does.

The scheduler sends the detokenizer two lists per request and chunk: ``decode_ids``,
the window the incremental detokenizer decodes -- its first chunk begins with up to
five tokens of the prompt, so that text at the prompt/output boundary decodes right --
and ``output_ids``, the tokens generated since the last chunk.  In 0.5.1 - 0.5.4.post2
``DetokenizerManager.handle_batch_token_id_out`` copies ``decode_ids`` into the
``output_ids`` of the string batch it returns, so every ``/generate`` and
``Engine.generate`` response starts with the prompt's tail (sglang issue 10896).
Clients that compare or re-feed token ids (RL rollouts, evaluation, our own
end-to-end check) see sequences that are several tokens too long.

The wrapper lets the stock method do all its work and then puts the incoming
``output_ids`` into the outgoing batch -- the one-field change upstream made.  It
checks the shape first: if the scheduler did not send one list per request, the batch
leaves stock and the report counts it, rather than guessing.
"""

from __future__ import annotations

import threading
from typing import Any

from sglang_shims.patching import PatchContext

CLASS = "DetokenizerManager"
METHOD = "handle_batch_token_id_out"


def _usable(ids: Any, batch_size: int) -> bool:
    return isinstance(ids, list) and len(ids) == batch_size and all(
        isinstance(chunk, list) for chunk in ids)


def apply(ctx: PatchContext) -> None:
    cls = getattr(ctx.module, CLASS)
    counts = {"fixed": 0, "left": 0}
    lock = threading.Lock()

    def handle_batch_token_id_out(wrapped: Any, instance: Any, args: tuple[Any, ...],
                                  kwargs: dict[str, Any]) -> Any:
        out = wrapped(*args, **kwargs)
        recv = args[0] if args else kwargs.get("recv_obj")
        ids = getattr(recv, "output_ids", None)
        rids = getattr(recv, "rids", None)
        ok = (out is not None and hasattr(out, "output_ids") and rids is not None
              and _usable(ids, len(rids)))
        with lock:
            if ok:
                counts["fixed"] += 1
            else:
                first = counts["left"] == 0
                counts["left"] += 1
        if ok:
            out.output_ids = [list(chunk) for chunk in ids]
        elif first:
            ctx.note(f"{CLASS}.{METHOD}: a batch without one output_ids list per request "
                     "was passed through stock (its output_ids keep the prompt tail)")
        return out

    ctx.wrap(cls, METHOD, handle_batch_token_id_out)
