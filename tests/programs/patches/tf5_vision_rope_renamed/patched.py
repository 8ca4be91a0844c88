"""The cases from the class sglang's ``models/qwen2_5_vl.py`` imports, on transformers 5,
compared with the reference of argv[1]."""
import fake_cuda
from cases import compute

import json
import sys

import torch
import transformers

from import_attempt import import_attempt
from patch_state import print_result

result = {"transformers": transformers.__version__}
import sglang.srt.layers.quantization  # sglang 0.5.1 needs this first (own import cycle)

qwen2_5_vl = import_attempt(result, "sglang.srt.models.qwen2_5_vl")
if qwen2_5_vl is not None:
    from transformers.models.qwen2_5_vl import modeling_qwen2_5_vl as upstream
    cls = qwen2_5_vl.Qwen2_5_VisionRotaryEmbedding
    result["same_object"] = cls is upstream.Qwen2_5_VisionRotaryEmbedding
    result["new_class_kept"] = hasattr(upstream, "Qwen2_5_VLVisionRotaryEmbedding")
    ours, reference = compute(cls), torch.load(sys.argv[1])
    result["equal"] = [
        a[0].dtype == b[0].dtype and torch.equal(a[0], b[0]) and a[1].shape == b[1].shape
        and torch.equal(a[1], b[1]) and a[2] == b[2] for a, b in zip(ours, reference, strict=False)]
    result["shapes"] = [list(a[1].shape) for a in ours]
print_result(result, "tf5-vision-rope-renamed")
