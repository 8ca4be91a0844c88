"""Give vllm 0.5.2-0.8.0 the triton cache-directory helpers that triton 3.4 removed.

sglang releases up to 0.4.4.post1 require vllm, and some import it before their own
``sglang.srt.utils`` (0.4.0 does, from ``hf_transformers_utils``).  vllm's
``triton_utils/custom_cache_manager.py`` names ``default_cache_dir``,
``default_dump_dir`` and ``default_override_dir`` at module level, as sglang's utils
does; under triton 3.4 that import fails inside vllm's package initialisation and
surfaces as a circular-import error from ``vllm.model_executor.layers.quantization``.
``triton-cache-helpers-removed`` acts only when ``sglang.srt.utils`` is imported, too
late there, so this patch puts the same helpers back
(:mod:`sglang_shims.patching.triton_cache`) before vllm's module runs.
"""

from __future__ import annotations

from sglang_shims.patching import PatchContext
from sglang_shims.patching.triton_cache import supply


def apply(ctx: PatchContext) -> None:
    supply(ctx)
