"""The masks of transformers 4.55.2's own helpers, saved to argv[1] (no shims)."""
from cases import compute

import sys

import torch
import transformers

assert transformers.__version__ == "4.55.2", transformers.__version__
from transformers.modeling_attn_mask_utils import (
    _create_4d_causal_attention_mask, _prepare_4d_attention_mask)
torch.save(compute(_create_4d_causal_attention_mask, _prepare_4d_attention_mask), sys.argv[1])
print("{}")
