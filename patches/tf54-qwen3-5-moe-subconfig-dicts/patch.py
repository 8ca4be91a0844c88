"""Give sglang 0.5.9-0.5.10.post1's Qwen3.5 config classes their inherited __init__ back.

From transformers 5.4, ``PreTrainedConfig.__init_subclass__`` turns every config subclass
into a dataclass.  A subclass that writes no ``__init__`` of its own then gets one
generated from its fields, which shadows the ``__init__`` it used to inherit.  In
``sglang/srt/configs/qwen3_5.py`` that inherited ``__init__`` is where the sub-config
dicts of config.json become config objects (``Qwen3_5Config.__init__``), so
``Qwen3_5MoeConfig`` keeps ``vision_config`` and ``text_config`` as plain dicts and the
model fails to build (sglang PR 22839; fixed in 0.5.11 by writing the ``__init__`` out).

The generated function is recognised by where its code was compiled: not in the file of
the class's own module (transformers wraps dataclass()'s ``__init__`` in
configuration_utils.py to accept extra keywords).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from sglang_shims.patching import PatchContext


def written_here(cls: type) -> bool:
    """Is ``cls.__init__`` in the class's own dict, compiled from its own module's file?"""
    code = getattr(vars(cls).get("__init__"), "__code__", None)
    source = getattr(sys.modules.get(cls.__module__), "__file__", None)
    return code is not None and source is not None and Path(code.co_filename) == Path(source)


def inherited_init(cls: type) -> tuple[type, Any] | None:
    """(class, __init__) of the nearest base that wrote an ``__init__`` in its own file."""
    for base in cls.__mro__[1:]:
        if written_here(base):
            return base, vars(base)["__init__"]
    return None


def apply(ctx: PatchContext) -> None:
    module = ctx.module
    restored = []
    for name, cls in sorted(vars(module).items()):
        if not isinstance(cls, type) or cls.__module__ != module.__name__:
            continue
        if "__init__" not in vars(cls) or written_here(cls):
            continue  # inherits as written, or wrote its own
        found = inherited_init(cls)
        if found is None or not found[0].__module__.startswith("sglang."):
            continue  # only an __init__ sglang wrote is put back
        ctx.setattr(cls, "__init__", found[1])
        restored.append(f"{name} <- {found[0].__name__}.__init__")
    if not restored:
        ctx.retire(f"no config class in {module.__name__} has a generated __init__")
    ctx.note("inherited __init__ restored: " + "; ".join(restored))
