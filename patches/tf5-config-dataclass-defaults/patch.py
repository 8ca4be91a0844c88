"""Let sglang's VILAConfig be created on transformers >= 5.5.1, whose configs are dataclasses.

Since 5.4 (PR 41250) ``PreTrainedConfig.__init_subclass__`` runs ``dataclass()`` on every
config subclass, turning each annotated class attribute into a dataclass field.
sglang 0.4.7.post1 - 0.5.4 declares VILA's config (``sglang/srt/models/vila.py``) the
transformers 4 way, with annotated class attributes whose values a dataclass rejects::

    sub_configs: Dict[str, PretrainedConfig] = {"text_config": Qwen2Config(), ...}
    text_config: Qwen2Config = Qwen2Config()     # config instances are unhashable in v5

so the class statement raises ``ValueError: mutable default <class 'dict'> for field
sub_configs is not allowed`` and the VILA model and its processor no longer import.

For the rest of the process ``PreTrainedConfig.__init_subclass__`` is wrapped, but it acts
only on classes defined in the target module (``sglang.srt.models.vila``): before
transformers' hook runs, each annotation whose class-level value is unhashable (what
``dataclass`` refuses) is re-declared ``ClassVar``.  Those values stay plain class
attributes, exactly what they were under transformers 4; every other field of the class,
and every other config class, is left to transformers.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from sglang_shims.patching import PatchContext, keep_as_class_attributes


def apply(ctx: PatchContext) -> None:
    from transformers import configuration_utils
    base = getattr(configuration_utils, "PreTrainedConfig", None) \
        or configuration_utils.PretrainedConfig
    if not dataclasses.is_dataclass(base):
        ctx.retire("transformers' PretrainedConfig is not a dataclass here")
    owner = ctx.module.__name__

    def init_subclass(wrapped: Any, instance: Any, args: tuple[Any, ...],
                      kwargs: dict[str, Any]) -> Any:
        cls = instance
        if isinstance(cls, type) and cls.__dict__.get("__module__") == owner:
            changed = keep_as_class_attributes(cls, unhashable=True)
            if changed:
                ctx.log.info("%s.%s: kept %s as class attributes", owner, cls.__qualname__,
                             ", ".join(changed))
        return wrapped(*args, **kwargs)

    ctx.wrap(base, "__init_subclass__", init_subclass)
    ctx.note(f"config classes defined in {owner} keep annotated class attributes with"
             " unhashable values as ClassVar (plain class attributes)")
