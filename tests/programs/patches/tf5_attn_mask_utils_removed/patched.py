"""The same masks through the module sglang's CLIP imported them from, on transformers 5,
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
clip = import_attempt(result, "sglang.srt.models.clip")
if clip is not None:
    import transformers.modeling_attn_mask_utils as mask_utils
    assert clip._create_4d_causal_attention_mask is mask_utils._create_4d_causal_attention_mask
    ours = compute(mask_utils._create_4d_causal_attention_mask,
                   mask_utils._prepare_4d_attention_mask)
    reference = torch.load(sys.argv[1])
    def same(a, b):
        if a is None or b is None:
            return a is None and b is None
        return a.shape == b.shape and a.dtype == b.dtype and torch.equal(a, b)
    result["causal"] = [same(a, b) for a, b in zip(ours[0], reference[0], strict=False)]
    result["causal_none"] = sum(r is None for r in reference[0])
    result["padding"] = [same(a, b) for a, b in zip(ours[1], reference[1], strict=False)]
    result["registered"] = transformers.modeling_attn_mask_utils is mask_utils
    try:
        from transformers.modeling_attn_mask_utils import AttentionMaskConverter
    except ImportError as exc:
        result["other_import"] = str(exc)
    try:
        mask_utils.AttentionMaskConverter  # noqa: B018  (reading it raises)
    except AttributeError as exc:
        result["other_attribute"] = str(exc)
print_result(result, "tf5-attn-mask-utils-removed")
