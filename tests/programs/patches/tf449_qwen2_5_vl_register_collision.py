"""Which processors transformers maps sglang's Qwen2_5_VLConfig (and its own) to once
``sglang.srt.configs`` is imported, and whether another colliding registration still
raises; argv[1]: the patch whose state is reported."""
import sys

import transformers
from transformers.models.auto.image_processing_auto import IMAGE_PROCESSOR_MAPPING
from transformers.models.auto.processing_auto import PROCESSOR_MAPPING

from patch_state import print_result

def name(cls):
    return None if cls is None else f"{cls.__module__}.{cls.__qualname__}"

def mapped(config):
    image = IMAGE_PROCESSOR_MAPPING[config]
    return {"image": [name(c) for c in image] if isinstance(image, tuple) else name(image),
            "processor": name(PROCESSOR_MAPPING[config])}

result = {"transformers": transformers.__version__}
native = getattr(transformers, "Qwen2_5_VLConfig", None)
before = mapped(native) if native is not None else None
try:
    import sglang.srt.configs
    from sglang.srt.configs import qwen2_5_vl_config as ours
except (ImportError, ValueError) as exc:
    result["import"] = f"{type(exc).__name__}: {exc}"
else:
    result["import"] = "ok"
    result["ours"] = mapped(ours.Qwen2_5_VLConfig)
    if native is not None:
        result["native_unchanged"] = mapped(native) == before
        result["native"] = before
        Qwen2_5_VLConfig = type("Qwen2_5_VLConfig", (transformers.PretrainedConfig,), {})
        try:
            transformers.AutoProcessor.register(Qwen2_5_VLConfig, ours.Qwen2_5_VLProcessor)
        except ValueError as exc:
            result["others"] = str(exc)
print_result(result, sys.argv[1])
