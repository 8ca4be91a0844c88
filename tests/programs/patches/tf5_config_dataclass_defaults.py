"""sglang's VILA config on this transformers: created, constructed, serialised and reloaded;
and the fields of another sglang config class, which must not change."""
import fake_cuda
import dataclasses
import tempfile

import transformers

from import_attempt import import_attempt
from patch_state import print_result

import sglang.srt.layers.quantization  # sglang 0.5.1 needs this first (own import cycle)
from sglang.srt.configs.deepseekvl2 import DeepseekVL2Config
result = {"transformers": transformers.__version__,
          "other_fields": sorted(f.name for f in dataclasses.fields(DeepseekVL2Config))}
vila = import_attempt(result, "sglang.srt.models.vila")
if vila is not None:
    VILAConfig = vila.VILAConfig
    fields = {f.name for f in dataclasses.fields(VILAConfig)}
    result["fields"] = sorted(fields & {"sub_configs", "text_config", "vision_config",
                                        "model_type", "hidden_size", "image_token_id"})
    result["class_attributes"] = [type(VILAConfig.sub_configs).__name__,
                                  sorted(VILAConfig.sub_configs),
                                  type(VILAConfig.text_config).__name__]
    default = VILAConfig()
    result["default"] = [default.model_type, default.hidden_size, default.image_token_id,
                         type(default.text_config).__name__,
                         type(default.vision_config).__name__]
    config = VILAConfig(
        text_config={"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
                     "num_key_value_heads": 2, "intermediate_size": 128},
        vision_config={"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2,
                       "intermediate_size": 64},
        hidden_size=64, mm_hidden_size=32, mm_projector_type="mlp_downsample_2x2_fix")
    folder = tempfile.mkdtemp()
    config.save_pretrained(folder)
    loaded = VILAConfig.from_pretrained(folder)
    result["reloaded"] = [loaded.hidden_size, loaded.mm_hidden_size, loaded.mm_projector_type,
                          loaded.text_config.hidden_size, loaded.text_config.num_hidden_layers,
                          loaded.vision_config.hidden_size]
print_result(result, "tf5-config-dataclass-defaults")
