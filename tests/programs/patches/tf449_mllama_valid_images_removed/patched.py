"""The table from the helper sglang's ``qwen2_5_vl_config.py`` bound, on transformers 4.49."""
from cases import table

import transformers

from import_attempt import import_attempt
from patch_state import print_result

result = {"transformers": transformers.__version__}
qwen2_5_vl_config = import_attempt(result, "sglang.srt.configs.qwen2_5_vl_config")
if qwen2_5_vl_config is not None:
    result["table"] = table(qwen2_5_vl_config.is_valid_list_of_images)
print_result(result, "tf449-mllama-valid-images-removed")
