"""sglang's config registry on this transformers: whether ``sglang.srt.configs`` imports,
which classes AutoConfig builds for ``qwen3_asr``, and whether anyone else's registration
over a native model type is still refused."""
import tempfile

import transformers
from transformers import AutoConfig, LlamaConfig

from import_attempt import import_attempt
from patch_state import print_result

result = {"transformers": transformers.__version__}
import_attempt(result, "sglang.srt.configs")
if result["import"] == "ok":
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING
    from transformers.models.qwen3_asr.configuration_qwen3_asr import (
        Qwen3ASRConfig as NativeQwen3ASRConfig)
    from sglang.srt.configs.qwen3_asr import Qwen3ASRConfig, Qwen3ASRThinkerConfig
    result["registered"] = [CONFIG_MAPPING["qwen3_asr"] is Qwen3ASRConfig,
                            CONFIG_MAPPING["qwen3_asr_thinker"] is Qwen3ASRThinkerConfig]
    folder = tempfile.mkdtemp()
    Qwen3ASRConfig().save_pretrained(folder)
    loaded = AutoConfig.from_pretrained(folder)
    result["auto"] = [type(loaded).__module__, type(loaded.thinker_config).__name__,
                      NativeQwen3ASRConfig.__module__]
    # anyone else's registration over a native model type is still refused
    class MyLlamaConfig(LlamaConfig):
        model_type = "llama"
    try:
        AutoConfig.register("llama", MyLlamaConfig)
        result["others"] = "registered"
    except ValueError as exc:
        result["others"] = str(exc)
print_result(result, "tf-config-register-collision")
