"""Let sglang 0.4.3.post1 - 0.4.4.post1 register its Qwen2.5-VL processors on transformers >= 4.49.

``sglang/srt/configs/qwen2_5_vl_config.py`` defines its own ``Qwen2_5_VLConfig``,
image processor and processor (transformers had none before 4.49) and ends with::

    AutoImageProcessor.register(Qwen2_5_VLConfig, ...)
    AutoProcessor.register(Qwen2_5_VLConfig, Qwen2_5_VLProcessor)

``sglang.srt.configs`` imports the file, so it runs in every sglang process. transformers
4.49 ships its own ``Qwen2_5_VLConfig``, and the auto mappings refuse a config class whose
*name* they already map (``ValueError: '<class ...Qwen2_5_VLConfig'>' is already used by
a Transformers model.``) unless ``exist_ok=True``. sglang 0.4.4.post2 dropped its copy.

The mappings are keyed by the class object, so registering with ``exist_ok=True`` maps
sglang's config to sglang's processors and leaves transformers' own class mapped to
transformers' processors -- what the same call did on transformers 4.48. The wrappers
change only calls whose config class is defined in the target module and is named like a
config class transformers defines.
"""

from __future__ import annotations

from typing import Any

from sglang_shims.patching import PatchContext, argument


def apply(ctx: PatchContext) -> None:
    from transformers.models.auto import configuration_auto, image_processing_auto, processing_auto

    native = set(configuration_auto.CONFIG_MAPPING_NAMES.values())
    owner = ctx.module.__name__
    for auto in (image_processing_auto.AutoImageProcessor, processing_auto.AutoProcessor):
        _tolerate_ours(ctx, auto, owner, native)
    ctx.note(f"AutoImageProcessor.register and AutoProcessor.register pass exist_ok=True for"
             f" config classes of {owner} named like transformers' own")


def _tolerate_ours(ctx: PatchContext, auto: Any, owner: str, native: set[str]) -> None:
    """Wrap ``auto.register`` so that ``owner``'s colliding config classes pass exist_ok."""
    config_of = argument(auto.register, "config_class")
    exist_ok = argument(auto.register, "exist_ok")

    def register(wrapped: Any, instance: Any, args: tuple[Any, ...],
                 kwargs: dict[str, Any]) -> Any:
        config = config_of(instance, args, kwargs)
        if (not exist_ok(instance, args, kwargs)
                and getattr(config, "__module__", None) == owner
                and getattr(config, "__name__", None) in native):
            ctx.log.info("transformers defines a %s of its own; registering sglang's with"
                         " %s.register(exist_ok=True)", config.__name__, auto.__name__)
            args, kwargs = exist_ok.replaced(instance, args, kwargs, True)
        return wrapped(*args, **kwargs)

    ctx.wrap(auto, "register", register)
