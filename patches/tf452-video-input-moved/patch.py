"""tf452-video-input-moved: what breaks, and why this change is the safe fix.

manifest.toml says where and when this runs; this docstring says why.
"""

from __future__ import annotations

from sglang_shims.patching import PatchContext


def apply(ctx: PatchContext) -> None:
    """Change ``ctx.module`` (the target, before its body runs) through ``ctx`` only --
    ``ctx.setattr``, ``ctx.wrap``, ``ctx.setitem``, ``ctx.setenv`` -- so that a failure is
    rolled back and ``sglang_shims.revert()`` can undo it."""
    ctx.retire("patch.py is still the skeleton `sglang-shims new` wrote")
