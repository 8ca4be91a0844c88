"""Let sglang 0.5.11 - 0.5.19 register its Qwen3-ASR config on transformers >= 5.13.

``sglang/srt/configs/qwen3_asr.py`` ends with::

    AutoConfig.register("qwen3_asr", Qwen3ASRConfig)
    AutoConfig.register("qwen3_asr_thinker", Qwen3ASRThinkerConfig)

and ``sglang.srt.configs`` imports it, so it runs in every sglang process.  transformers
5.13 ships a native ``qwen3_asr`` config, and ``AutoConfig.register`` refuses a model type
that transformers already has (``ValueError: 'qwen3_asr' is already used by a Transformers
config, pick another name.``): ``import sglang`` fails for every model.

sglang 0.5.20 fixed it by registering with ``exist_ok=True``; this patch does the same for
the releases before.  While the process lives, ``AutoConfig.register`` is wrapped, but it
only changes calls whose config class is defined in ``sglang.srt.configs.qwen3_asr`` and
whose model type transformers already defines: those get ``exist_ok=True``.  sglang's class
is the one that wins, as upstream chose: sglang's Qwen3-ASR model reads sglang's layout
(``thinker_config``), which transformers' own Qwen3ASRConfig (``audio_config`` /
``text_config``) does not have.  Every other registration behaves as before.
"""

from __future__ import annotations

from typing import Any

from sglang_shims.patching import PatchContext, argument


def apply(ctx: PatchContext) -> None:
    from transformers.models.auto import configuration_auto
    native = configuration_auto.CONFIG_MAPPING_NAMES
    owner = ctx.module.__name__
    auto = configuration_auto.AutoConfig
    model_type_of = argument(auto.register, "model_type")
    config_of = argument(auto.register, "config")
    exist_ok = argument(auto.register, "exist_ok")

    def register(wrapped: Any, instance: Any, args: tuple[Any, ...],
                 kwargs: dict[str, Any]) -> Any:
        model_type = model_type_of(instance, args, kwargs)
        config = config_of(instance, args, kwargs)
        if (not exist_ok(instance, args, kwargs)
                and getattr(config, "__module__", None) == owner and model_type in native):
            ctx.log.info("transformers already defines model type %r; registering sglang's"
                         " %s over it (exist_ok=True, as sglang >= 0.5.20 does)",
                         model_type, getattr(config, "__name__", config))
            args, kwargs = exist_ok.replaced(instance, args, kwargs, True)
        return wrapped(*args, **kwargs)

    ctx.wrap(auto, "register", register)
    ctx.note(f"AutoConfig.register tolerates model types transformers already defines, for"
             f" config classes of {owner} only")
