"""``import sglang.srt.configs`` on this transformers, and how Janus-Pro's image processor
is registered."""
import json

import transformers

from import_attempt import import_attempt
from patch_state import print_result

result = {"transformers": transformers.__version__}
import_attempt(result, "sglang.srt.configs")
if result["import"] == "ok":
    from transformers.models.auto.image_processing_auto import IMAGE_PROCESSOR_MAPPING
    from sglang.srt.configs.janus_pro import MultiModalityConfig
    entry = IMAGE_PROCESSOR_MAPPING[MultiModalityConfig]
    result["registered"] = [None if c is None else f"{c.__module__}.{c.__qualname__}"
                            for c in entry]
print_result(result, "tf5-image-processor-register")
