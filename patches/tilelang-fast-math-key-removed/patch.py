"""Put back the pass-option name sglang 0.5.3rc2-0.5.8.post1 builds its tilelang kernels with.

``sglang/srt/layers/attention/nsa/tilelang_kernel.py`` (DeepSeek V3.2's sparse attention
and indexer kernels) starts with::

    pass_configs = {
        tilelang.PassConfigKey.TL_DISABLE_WARP_SPECIALIZED: True,
        tilelang.PassConfigKey.TL_DISABLE_TMA_LOWER: True,
        tilelang.PassConfigKey.TL_DISABLE_FAST_MATH: True,
    }

tilelang deprecated ``TL_DISABLE_FAST_MATH`` for ``TL_ENABLE_FAST_MATH`` (fast math off by
default, tilelang PR 846) and removed the name from ``PassConfigKey`` in 0.1.7.post1, so
the module fails with ``AttributeError: type object 'PassConfigKey' has no attribute
'TL_DISABLE_FAST_MATH'`` (sglang issue 17298).  The option itself, the string
``"tl.disable_fast_math"``, is still registered by tilelang's library, and its compiler
reads only ``TL_ENABLE_FAST_MATH``: the name, set back on the class as that string, gives
sglang the dict it built on tilelang 0.1.7 and the kernels the flags they had.
"""

from __future__ import annotations

import importlib

from sglang_shims.patching import PatchContext

NAME = "TL_DISABLE_FAST_MATH"
OPTION = "tl.disable_fast_math"


def apply(ctx: PatchContext) -> None:
    keys = importlib.import_module("tilelang").PassConfigKey
    if hasattr(keys, NAME):
        ctx.retire(f"tilelang.PassConfigKey still has {NAME}")
    ctx.setattr(keys, NAME, OPTION)  # a plain attribute: the enum's members are untouched
    ctx.note(f"tilelang.PassConfigKey.{NAME} is {OPTION!r} again (the option tilelang "
             "still registers)")
