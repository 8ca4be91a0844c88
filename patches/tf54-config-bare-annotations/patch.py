"""Let sglang's config classes be created on transformers 5.4.0 and 5.5.0.

Those two releases turn every config subclass into a dataclass whose fields are *not*
keyword-only (5.5.1 made them so).  sglang 0.4.4.post2 - 0.5.9 declares several configs
the transformers 4 way, for example ``DeepseekVL2Config``::

    model_type: str = "deepseek_vl_v2"
    vision_config: DeepseekVL2VisionEncoderConfig     # an annotation, no value

and ``dataclass()`` refuses a field without a default after one with a default:
``TypeError: non-default argument 'vision_config' follows default argument`` at
``import sglang.srt.configs`` -- every sglang entry point imports it, so nothing starts.
(sglang 0.5.10 gave those annotations ``= None``.)

From ``sglang.srt.configs`` on, for the rest of the process, the wrapper around
``PreTrainedConfig.__init_subclass__`` re-declares ``ClassVar``, in classes defined in
``sglang`` modules only, the annotations transformers 4 treated as mere annotations or
plain class attributes and these dataclasses reject: those with no class-level value,
and those whose value is unhashable (VILA's config dicts, on the same releases).  The
classes' own ``__init__`` sets those attributes on each instance, as before;
serialisation reads ``__dict__``.  Every other class goes to transformers untouched.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

from sglang_shims.patching import PatchContext, keep_as_class_attributes


def apply(ctx: PatchContext) -> None:
    from transformers import configuration_utils

    base = getattr(configuration_utils, "PreTrainedConfig", None) \
        or configuration_utils.PretrainedConfig
    if not dataclasses.is_dataclass(base):
        ctx.retire("transformers' PretrainedConfig is not a dataclass here")
    try:
        hook = inspect.getsource(base.__init_subclass__)
    except (OSError, TypeError):
        hook = ""
    if "kw_only=True" in hook:
        ctx.retire("transformers makes config fields keyword-only (5.5.1+): bare "
                   "annotations are accepted there")
    kept: dict[str, list[str]] = {}

    def init_subclass(wrapped: Any, instance: Any, args: tuple[Any, ...],
                      kwargs: dict[str, Any]) -> Any:
        cls = instance
        module = cls.__dict__.get("__module__", "") if isinstance(cls, type) else ""
        if isinstance(module, str) and (module == "sglang" or module.startswith("sglang.")):
            changed = keep_as_class_attributes(cls, unhashable=True, bare=True)
            if changed:
                kept[f"{module}.{cls.__qualname__}"] = changed
                ctx.log.info("%s.%s: kept %s as class annotations", module,
                             cls.__qualname__, ", ".join(changed))
        return wrapped(*args, **kwargs)

    ctx.wrap(base, "__init_subclass__", init_subclass)
    ctx.note("config classes defined in sglang modules keep bare and unhashable annotated"
             " class attributes out of transformers' dataclass fields")
