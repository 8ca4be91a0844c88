"""The cache-folder helpers triton 3.4 removed from ``triton.runtime.cache``, put back.

``default_cache_dir``, ``default_dump_dir`` and ``default_override_dir`` were module-level
functions of ``triton/runtime/cache.py`` until triton PR 6467 replaced them with
``triton.knobs.cache.dir`` / ``.dump_dir`` / ``.override_dir``.  Two importers still
name them at module level: sglang's ``srt/utils.py`` (before 0.4.9.post1) and vllm's
``triton_utils/custom_cache_manager.py`` (0.5.2-0.8.0), which some sglang releases import
first.  Each of their patches calls :func:`supply` before its target runs; the first one
to run puts them back, the other finds them there.

The substitutes answer what triton 3.4+ itself uses for its own ``FileCacheManager``: the
knob (which honours ``TRITON_CACHE_DIR`` / ``TRITON_DUMP_DIR`` / ``TRITON_OVERRIDE_DIR``),
or, when the knob is absent or empty, ``$TRITON_HOME/.triton/<cache|dump|override>`` (the
home directory when ``TRITON_HOME`` is unset): what the removed helpers returned.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..engine.journal import PatchContext

# removed helper -> (attribute of triton.knobs.cache, sub-folder of $TRITON_HOME/.triton)
HELPERS = {
    "default_cache_dir": ("dir", "cache"),
    "default_dump_dir": ("dump_dir", "dump"),
    "default_override_dir": ("override_dir", "override"),
}


def _triton_home() -> Path:
    return Path(os.environ.get("TRITON_HOME", "").strip() or Path.home())


def _resolve(helper: str) -> str:
    knob, folder = HELPERS[helper]
    try:
        from triton import knobs  # type: ignore[import-not-found, import-untyped, unused-ignore]

        value = getattr(knobs.cache, knob)
    except (ImportError, AttributeError):
        value = None
    if value:
        return str(os.fspath(value))
    return str(_triton_home() / ".triton" / folder)


class Helper:
    """One removed helper, callable as before.  A class rather than a function for one
    reason: it carries the engine's proxy mark, so a retire rule asking whether triton
    exports the name again is answered by triton, never by a helper put back here."""

    _sglang_shims_proxy = True

    def __init__(self, name: str, doc: str) -> None:
        self.__name__ = self.__qualname__ = name
        self.__doc__ = doc
        self.__module__ = __name__

    def __call__(self) -> str:
        return _resolve(self.__name__)

    def __repr__(self) -> str:
        return f"<triton.runtime.cache.{self.__name__}, put back by sglang-shims>"


SUBSTITUTES = {helper.__name__: helper for helper in (
    Helper("default_cache_dir", "Triton's compilation cache folder (knobs.cache.dir)."),
    Helper("default_dump_dir", "Triton's IR dump folder (knobs.cache.dump_dir)."),
    Helper("default_override_dir", "Triton's kernel override folder (knobs.cache.override_dir)."),
)}


def supply(ctx: PatchContext) -> None:
    """Put the missing helpers on ``triton.runtime.cache``; retire the patch when none is
    missing (a triton that still defines them, or another patch that already acted)."""
    from triton.runtime import cache  # type: ignore[import-not-found, import-untyped, unused-ignore]

    missing = [name for name in SUBSTITUTES if name not in vars(cache)]
    if not missing:
        if all(vars(cache)[name] is SUBSTITUTES[name] for name in SUBSTITUTES):
            ctx.note("already put back in this process (by the patch of the module that"
                     " imported them first)")
            return
        ctx.retire("triton.runtime.cache defines default_cache_dir, default_dump_dir and"
                   " default_override_dir")
    try:
        from triton import knobs  # type: ignore[import-not-found, import-untyped, unused-ignore]

        source = "triton.knobs.cache" if hasattr(knobs, "cache") else None
    except ImportError:
        source = None
    for name in missing:
        ctx.setattr(cache, name, SUBSTITUTES[name])
    ctx.note(f"supplied {', '.join(missing)} on triton.runtime.cache, answering from "
             + (source or "$TRITON_HOME/.triton (this triton has no knobs.cache)"))
