"""Give sglang < 0.4.9.post1 the triton cache-directory helpers that triton 3.4 removed.

``sglang/srt/utils.py`` (0.1.25 - 0.4.9) does, at module level::

    from triton.runtime.cache import (FileCacheManager, default_cache_dir,
                                      default_dump_dir, default_override_dir)

Triton 3.4 (triton-lang/triton PR 6467) replaced the three helpers by
``triton.knobs.cache.dir`` / ``.dump_dir`` / ``.override_dir``, so that import fails and
nothing of sglang's runtime imports.  Before ``sglang.srt.utils`` runs, the missing names
are put back on ``triton.runtime.cache`` (:mod:`sglang_shims.patching.triton_cache`: what
they answer and why; ``vllm-triton-cache-helpers-removed`` puts back the same ones where
vllm imports them first).
"""

from __future__ import annotations

from sglang_shims.patching import PatchContext
from sglang_shims.patching.triton_cache import supply


def apply(ctx: PatchContext) -> None:
    supply(ctx)
