"""sglang's ``get_config`` on the model folder argv[1]: the class of the loaded config, and
of each sub-config with its values."""
import json
import sys

import transformers
from sglang.srt.utils.hf_transformers_utils import get_config

from patch_state import print_result

result = {"transformers": transformers.__version__}
config = get_config(sys.argv[1], trust_remote_code=False)
result["class"] = type(config).__name__
for key in ("vision_config", "text_config"):
    sub = getattr(config, key)
    result[key] = type(sub).__name__
    values = sub if isinstance(sub, dict) else sub.to_dict()
    result[key + "_values"] = json.loads(json.dumps(values, default=str))
print_result(result, "tf54-qwen3-5-moe-subconfig-dicts")
