"""Point ``outlines.fsm.json_schema.build_regex_from_schema`` at its new home for old sglang.

sglang 0.4.0 - 0.4.2.post3 start ``sglang/srt/constrained/outlines_backend.py`` (on CUDA)
with::

    from outlines.fsm.json_schema import build_regex_from_schema

outlines 0.1.9 moved the function to ``outlines_core.fsm.json_schema`` and kept only the
schema helpers in ``outlines.fsm.json_schema``, so on any outlines >= 0.1.9 (pulled up, in
the reports, by a vllm upgrade) the outlines grammar backend no longer imports and
JSON-constrained requests fail. sglang 0.4.2.post4 falls back to outlines_core itself.

The fix is the one sglang later made: the same function, from the package outlines now
calls it from, bound under the old name before the backend's body runs. Nothing is
rewritten here, so the regex produced is outlines' own.
"""

from __future__ import annotations

import importlib

from sglang_shims.patching import PatchContext

OLD = "outlines.fsm.json_schema"
NEW = "outlines_core.fsm.json_schema"
NAME = "build_regex_from_schema"


def apply(ctx: PatchContext) -> None:
    old = importlib.import_module(OLD)
    if hasattr(old, NAME):
        ctx.retire(f"{OLD} still defines {NAME}")
    new = importlib.import_module(NEW)  # ImportError here fails the patch, truthfully
    function = getattr(new, NAME)
    ctx.setattr(old, NAME, function)
    ctx.note(f"{OLD}.{NAME} is {NEW}.{NAME}")
