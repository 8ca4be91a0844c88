"""Give sglang < 0.4.9.post1 the triton cache-directory helpers that triton 3.4 removed.

``sglang/srt/utils.py`` (0.1.25 - 0.4.9) does, at module level::

    from triton.runtime.cache import (FileCacheManager, default_cache_dir,
                                      default_dump_dir, default_override_dir)

Triton 3.4 (triton-lang/triton PR 6467) replaced the three helpers by
``triton.knobs.cache.dir`` / ``.dump_dir`` / ``.override_dir``, so that import fails and
nothing of sglang's runtime imports.  Before ``sglang.srt.utils`` runs, the missing
names are put back on ``triton.runtime.cache`` as ordinary functions that answer what
triton 3.4+ itself uses for its own ``FileCacheManager``: the knob value (which honours
``TRITON_CACHE_DIR`` / ``TRITON_DUMP_DIR`` / ``TRITON_OVERRIDE_DIR``), or
``$TRITON_HOME/.triton/<cache|dump|override>`` (home directory when ``TRITON_HOME`` is
unset), the value the removed helpers returned, when the knob is absent or empty.
"""

from __future__ import annotations

import os
from pathlib import Path

from sglang_shims.patching import PatchContext

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
        from triton import knobs

        value = getattr(knobs.cache, knob)
    except (ImportError, AttributeError):
        value = None
    if value:
        return str(os.fspath(value))
    return str(_triton_home() / ".triton" / folder)


def default_cache_dir() -> str:
    """Triton's compilation cache folder (``triton.knobs.cache.dir``)."""
    return _resolve("default_cache_dir")


def default_dump_dir() -> str:
    """Triton's IR dump folder (``triton.knobs.cache.dump_dir``)."""
    return _resolve("default_dump_dir")


def default_override_dir() -> str:
    """Triton's kernel override folder (``triton.knobs.cache.override_dir``)."""
    return _resolve("default_override_dir")


SUBSTITUTES = {f.__name__: f for f in (default_cache_dir, default_dump_dir, default_override_dir)}


def apply(ctx: PatchContext) -> None:
    from triton.runtime import cache

    missing = [name for name in SUBSTITUTES if name not in vars(cache)]
    if not missing:
        ctx.retire("triton.runtime.cache still defines default_cache_dir, default_dump_dir"
                   " and default_override_dir")
    try:
        from triton import knobs

        source = "triton.knobs.cache" if hasattr(knobs, "cache") else None
    except ImportError:
        source = None
    for name in missing:
        ctx.setattr(cache, name, SUBSTITUTES[name])
    ctx.note(f"supplied {', '.join(missing)} on triton.runtime.cache, answering from "
             + (source or "$TRITON_HOME/.triton (this triton has no knobs.cache)"))
