"""sglang's ``sglang.srt.configs`` imported as model loading imports it; where it imports,
the ``VideoInput`` its ``qwen2_5_vl_config.py`` bound, and that file's own image processor
run on images and on a video (digests of what it returns)."""
import hashlib
import importlib.util
import inspect

import numpy as np
import PIL.Image

import transformers

from import_attempt import import_attempt
from patch_state import print_result


def digest(array):
    array = np.ascontiguousarray(array)
    return [list(array.shape), str(array.dtype), hashlib.sha256(array.tobytes()).hexdigest()]


def picture(height, width, seed):
    pixels = np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)
    return PIL.Image.fromarray(pixels)


result = {"transformers": transformers.__version__}
configs = import_attempt(result, "sglang.srt.configs")
if configs is not None:
    from transformers import image_utils

    from sglang.srt.configs import qwen2_5_vl_config as module

    alias = module.VideoInput
    result["image_utils_binds"] = alias is vars(image_utils).get("VideoInput")
    if importlib.util.find_spec("transformers.video_utils") is not None:
        from transformers import video_utils
        result["video_utils_alias"] = alias is video_utils.VideoInput
    videos = inspect.signature(module.Qwen2_5_VLImageProcessor.preprocess).parameters["videos"]
    result["annotation_is_alias"] = videos.annotation is alias

    processor = module.Qwen2_5_VLImageProcessor()
    images = [picture(56, 56, 0), picture(84, 112, 1), picture(60, 90, 2)]
    out = processor.preprocess(images=images, return_tensors="np")
    result["images"] = {key: digest(out[key]) for key in ("pixel_values", "image_grid_thw")}
    frames = [picture(56, 84, 10 + i) for i in range(4)]
    out = processor.preprocess(images=None, videos=[frames], return_tensors="np")
    result["video"] = {key: digest(out[key])
                       for key in ("pixel_values_videos", "video_grid_thw")}
print_result(result, "tf452-video-input-moved")
