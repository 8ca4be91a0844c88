"""The cases from transformers 4.55.2's own Qwen2_5_VisionRotaryEmbedding, saved to argv[1]."""
from cases import compute

import sys

import torch
import transformers

assert transformers.__version__ == "4.55.2", transformers.__version__
from transformers.models.qwen2_5_vl.modeling_qwen2_5_vl import Qwen2_5_VisionRotaryEmbedding

torch.save(compute(Qwen2_5_VisionRotaryEmbedding), sys.argv[1])
print("{}")
