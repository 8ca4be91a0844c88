"""Pixtral RoPE cases: configs (head_dim, image_size, patch_size, rope_theta), random image
grids and inputs; ``compute`` gives each case's position ids, inverse frequencies, cos and
sin, for a rotary class and meshgrid function."""
import random

import torch
from transformers import PixtralVisionConfig

# (head_dim, image_size, patch_size, rope_theta)
CONFIGS = [(64, 1024, 16, 10000.0), (32, 224, 14, 10000.0), (48, 160, 16, 1e6)]


def make_config(head_dim, image_size, patch_size, theta, v5):
    common = dict(hidden_size=head_dim * 2, num_attention_heads=2, head_dim=head_dim,
                  image_size=image_size, patch_size=patch_size)
    if v5:
        return PixtralVisionConfig(rope_parameters={"rope_type": "axial", "rope_theta": theta},
                                   **common)
    return PixtralVisionConfig(rope_theta=theta, **common)


def compute(rotary_cls, meshgrid, v5):
    rng = random.Random(3)
    gen = torch.Generator().manual_seed(3)
    out = []
    for head_dim, image_size, patch_size, theta in CONFIGS:
        side = image_size // patch_size
        rotary = rotary_cls(make_config(head_dim, image_size, patch_size, theta, v5))
        grids = [torch.zeros(8, rng.randint(1, side), rng.randint(1, side)) for _ in range(3)]
        ids = meshgrid(grids, max_width=side)
        for dtype in (torch.float32, torch.bfloat16):
            x = torch.randn(1, len(ids), head_dim * 2, generator=gen).to(dtype)
            cos, sin = rotary(x, ids)
            out.append((ids, rotary.inv_freq, cos, sin))
    return out
