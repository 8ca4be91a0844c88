"""The cases from transformers 4.55.2's own PixtralRotaryEmbedding and
position_ids_in_meshgrid, saved to argv[1] (no shims)."""
from cases import compute

import sys

import torch
import transformers

assert transformers.__version__ == "4.55.2", transformers.__version__
from transformers.models.pixtral.modeling_pixtral import (
    PixtralRotaryEmbedding, position_ids_in_meshgrid)
torch.save(compute(PixtralRotaryEmbedding, position_ids_in_meshgrid, v5=False), sys.argv[1])
print("{}")
