"""Register sglang's image processors by keyword, so transformers 5.0-5.3 accept it.

``register_image_processor`` in ``sglang.srt.configs.utils`` (sglang 0.4.4.post2 -
0.5.8.post1) calls ``AutoImageProcessor.register(config, None, image_processor, None,
exist_ok=True)``: positions written for transformers 4, whose signature is
``(config_class, image_processor_class, slow_image_processor_class,
fast_image_processor_class, exist_ok)``.  transformers 5.0.0rc3 removed
``image_processor_class``; the same five arguments then give ``exist_ok`` twice, and
``import sglang.srt.configs`` -- which registers Janus-Pro's processor at import --
fails, so no sglang entry point starts.

sglang 0.5.9 passes ``slow_image_processor_class=`` by keyword, which means the same
thing on every transformers; the wrapper makes that call instead.
"""

from __future__ import annotations

import inspect
from typing import Any

from sglang_shims.patching import PatchContext

FUNCTION = "register_image_processor"


def _bind(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any]:
    names = ("config", "image_processor")
    values = dict(zip(names, args, strict=False))
    values.update({k: v for k, v in kwargs.items() if k in names})
    extra = set(kwargs) - set(names)
    if len(args) > 2 or extra or len(values) != 2:
        raise TypeError(f"{FUNCTION}() takes (config, image_processor); got {len(args)} "
                        f"positional and {sorted(kwargs)} keyword arguments")
    return values["config"], values["image_processor"]


def apply(ctx: PatchContext) -> None:
    module = ctx.module
    auto = module.AutoImageProcessor
    try:
        params = inspect.signature(auto.register).parameters
    except (TypeError, ValueError) as exc:
        raise RuntimeError(f"cannot read AutoImageProcessor.register's signature: {exc}") \
            from exc
    if "image_processor_class" in params:
        ctx.retire("AutoImageProcessor.register still takes image_processor_class: "
                   "sglang's positional call means what it says")
    if "slow_image_processor_class" not in params or "exist_ok" not in params:
        raise RuntimeError("AutoImageProcessor.register has no slow_image_processor_class/"
                           f"exist_ok parameters ({list(params)}); nothing safe to do")
    original = getattr(module, FUNCTION)

    def register_image_processor(wrapped: Any, instance: Any, args: tuple[Any, ...],
                                 kwargs: dict[str, Any]) -> None:
        config, image_processor = _bind(args, kwargs)
        auto.register(config, slow_image_processor_class=image_processor, exist_ok=True)

    new = ctx.wrap(module, FUNCTION, register_image_processor)
    copies = ctx.rebind(original, new, "sglang")
    if copies:
        ctx.note(f"rebound {copies} copy(ies) of {FUNCTION} imported before the patch")
