"""sglang's config package on this transformers: whether it imports, what Janus-Pro's and
DeepSeek-VL2's configs serialise to, whether VILA imports, and whether a config class from
outside sglang with a bare annotation after a default is still refused."""
import fake_cuda
import json

import transformers
from transformers import PretrainedConfig

from import_attempt import import_attempt
from patch_state import print_result

result = {"transformers": transformers.__version__}
import_attempt(result, "sglang.srt.configs")
if result["import"] == "ok":
    from sglang.srt.configs.deepseekvl2 import DeepseekVL2Config
    from sglang.srt.configs.janus_pro import MultiModalityConfig
    ds = DeepseekVL2Config(vision_config={"width": 64}, projector_config={"n_embed": 32},
                           language_config={"hidden_size": 64, "num_hidden_layers": 2})
    mm = MultiModalityConfig(
        vision_config={"cls": "CLIPVisionTower", "params": {"image_size": 384}},
        aligner_config={"cls": "MlpProjector", "params": {"depth": 2}},
        gen_vision_config={"cls": "VQ-16", "params": {}},
        gen_aligner_config={"cls": "MlpProjector", "params": {}},
        gen_head_config={"cls": "vision_head", "params": {}},
        language_config={"hidden_size": 64})
    def plain(config):
        d = config.to_dict()
        d.pop("transformers_version", None)
        return json.loads(json.dumps(d, sort_keys=True, default=str))
    result["deepseekvl2"] = {k: v for k, v in plain(ds).items()
                             if k in ("vision_config", "projector_config", "tile_tag",
                                      "candidate_resolutions", "architectures")}
    result["janus"] = {k: v for k, v in plain(mm).items()
                       if k in ("vision_config", "aligner_config", "gen_head_config")}
    result["vision_width"] = ds.vision_config.width
    try:
        import sglang.srt.models.vila
        result["vila"] = "ok"
    except Exception as exc:
        result["vila"] = f"{type(exc).__name__}: {exc}"
try:
    class Outside(PretrainedConfig):
        model_type = "outside"
        a: int = 1
        b: int
    result["outside"] = "created"
except TypeError as exc:
    result["outside"] = f"TypeError: {exc}"
print_result(result, "tf54-config-bare-annotations")
