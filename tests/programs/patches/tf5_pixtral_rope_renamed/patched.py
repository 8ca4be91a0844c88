"""The cases from the objects sglang's ``models/pixtral.py`` imports, on transformers 5's own
PixtralVisionConfig, compared with the reference of argv[1]."""
import fake_cuda
from cases import compute

import json
import sys

import torch
import transformers

from import_attempt import import_attempt
from patch_state import patch_entry, print_result

result = {"transformers": transformers.__version__}
import sglang.srt.layers.quantization  # sglang 0.5.1 needs this first (own import cycle)

pixtral = import_attempt(result, "sglang.srt.models.pixtral")
if pixtral is not None:
    from transformers.models.pixtral import modeling_pixtral as upstream
    result["same_objects"] = (
        pixtral.PixtralRotaryEmbedding is upstream.PixtralRotaryEmbedding
        and pixtral.position_ids_in_meshgrid is upstream.position_ids_in_meshgrid)
    result["new_class_kept"] = hasattr(upstream, "PixtralVisionRotaryEmbedding")
    ours = compute(pixtral.PixtralRotaryEmbedding, pixtral.position_ids_in_meshgrid, v5=True)
    reference = torch.load(sys.argv[1])
    result["equal"] = [
        all(x.dtype == y.dtype and x.shape == y.shape and torch.equal(x, y)
            for x, y in zip(a, b, strict=False)) for a, b in zip(ours, reference, strict=False)]
    result["cos_dtypes"] = [str(a[2].dtype) for a in ours[:2]]
result["rope_theta_patch"] = patch_entry("tf5-rope-theta-moved")["state"]
print_result(result, "tf5-pixtral-rope-renamed")
