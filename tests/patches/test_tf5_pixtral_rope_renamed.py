"""tf5-pixtral-rope-renamed: sglang 0.5.1's Pixtral on transformers 5.24, RoPE as in 4.55.

transformers 4.55.2's own ``PixtralRotaryEmbedding`` and ``position_ids_in_meshgrid``
compute the reference in one interpreter; the patched sglang 0.5.1 process on
transformers 5.24.0 computes the same cases with the objects ``sglang/srt/models/pixtral.py``
imported, from transformers 5.24's own PixtralVisionConfig, and the results must be equal
element for element.  The RoPE-theta patch is switched off there, so the base is read
from ``rope_parameters`` by this patch itself.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from . import _transformers as tf5

pytestmark = pytest.mark.wheels

PATCH = "tf5-pixtral-rope-renamed"
paths = tf5.sglang_paths_fixture()  # sglang 0.5.1 on transformers 5

CASES = """
import random, torch
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
"""

REFERENCE = CASES + """
import sys, transformers
assert transformers.__version__ == "4.55.2", transformers.__version__
from transformers.models.pixtral.modeling_pixtral import (
    PixtralRotaryEmbedding, position_ids_in_meshgrid)
torch.save(compute(PixtralRotaryEmbedding, position_ids_in_meshgrid, v5=False), sys.argv[1])
print("{}")
"""

PATCHED = tf5.FAKE_CUDA + CASES + """
import json, sys, transformers
result = {"transformers": transformers.__version__}
import sglang.srt.layers.quantization  # sglang 0.5.1 needs this first (own import cycle)
""" + tf5.import_attempt("sglang.srt.models.pixtral", "pixtral") + """
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
            for x, y in zip(a, b)) for a, b in zip(ours, reference)]
    result["cos_dtypes"] = [str(a[2].dtype) for a in ours[:2]]
import sglang_shims
result["rope_theta_patch"] = sglang_shims.status()["tf5-rope-theta-moved"]["state"]
""" + tf5.end_with_state(PATCH)

reference = tf5.reference_fixture(REFERENCE, "pixtral_rope")


def test_stock_pixtral_does_not_import(paths: tuple[Path, ...], reference: Path) -> None:
    tf5.check_stock_import_fails(PATCHED, paths, PATCH, reference, "PixtralRotaryEmbedding",
                                 "transformers.models.pixtral.modeling_pixtral")


def test_patched_rotary_equals_transformers_4_55(paths: tuple[Path, ...],
                                                 reference: Path) -> None:
    data = tf5.run_applied(PATCHED, paths, PATCH, reference, disable="tf5-rope-theta-moved")
    assert data["import"] == "ok"
    assert data["rope_theta_patch"] == "disabled"  # the base comes from rope_parameters
    assert data["same_objects"] and data["new_class_kept"]
    assert len(data["equal"]) == 6 and all(data["equal"])
    assert data["cos_dtypes"] == ["torch.float32", "torch.bfloat16"]
