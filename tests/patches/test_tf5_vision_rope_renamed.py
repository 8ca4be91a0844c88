"""tf5-vision-rope-renamed: sglang 0.5.1's Qwen2.5-VL on transformers 5.24, RoPE as in 4.55.

transformers 4.55.2's own ``Qwen2_5_VisionRotaryEmbedding`` computes the reference
frequencies in one interpreter; the patched sglang 0.5.1 process on transformers 5.24.0
computes the same cases with the class ``sglang/srt/models/qwen2_5_vl.py`` imported, and
buffers and outputs must be equal element for element.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from . import _transformers as tf5

pytestmark = pytest.mark.wheels

PATCH = "tf5-vision-rope-renamed"

CASES = """
import torch
# (dim, theta or None for the default, seqlen): head_dim // 2 of real towers and odd ones
CASES = [(40, None, 1), (40, None, 64), (64, None, 100), (64, 1e4, 17), (32, 5e5, 33),
         (20, 2.5e3, 7), (80, None, 256)]

def compute(cls):
    out = []
    for dim, theta, seqlen in CASES:
        module = cls(dim) if theta is None else cls(dim, theta)
        out.append((module.inv_freq, module(seqlen), sorted(module.state_dict())))
    return out
"""

REFERENCE = CASES + """
import sys, transformers
assert transformers.__version__ == "4.55.2", transformers.__version__
from transformers.models.qwen2_5_vl.modeling_qwen2_5_vl import Qwen2_5_VisionRotaryEmbedding
torch.save(compute(Qwen2_5_VisionRotaryEmbedding), sys.argv[1])
print("{}")
"""

PATCHED = tf5.FAKE_CUDA + CASES + """
import json, sys, transformers
result = {"transformers": transformers.__version__}
import sglang.srt.layers.quantization  # sglang 0.5.1 needs this first (own import cycle)
""" + tf5.import_attempt("sglang.srt.models.qwen2_5_vl", "qwen2_5_vl") + """
if qwen2_5_vl is not None:
    from transformers.models.qwen2_5_vl import modeling_qwen2_5_vl as upstream
    cls = qwen2_5_vl.Qwen2_5_VisionRotaryEmbedding
    result["same_object"] = cls is upstream.Qwen2_5_VisionRotaryEmbedding
    result["new_class_kept"] = hasattr(upstream, "Qwen2_5_VLVisionRotaryEmbedding")
    ours, reference = compute(cls), torch.load(sys.argv[1])
    result["equal"] = [
        a[0].dtype == b[0].dtype and torch.equal(a[0], b[0]) and a[1].shape == b[1].shape
        and torch.equal(a[1], b[1]) and a[2] == b[2] for a, b in zip(ours, reference)]
    result["shapes"] = [list(a[1].shape) for a in ours]
""" + tf5.end_with_state(PATCH)

reference = tf5.reference_fixture(REFERENCE, "qwen_rope")
paths = tf5.sglang_paths_fixture()


def test_stock_qwen2_5_vl_does_not_import(paths: tuple[Path, ...], reference: Path) -> None:
    tf5.check_stock_import_fails(PATCHED, paths, PATCH, reference, "Qwen2_5_VisionRotaryEmbedding",
                                 "transformers.models.qwen2_5_vl.modeling_qwen2_5_vl")


def test_patched_rotary_equals_transformers_4_55(paths: tuple[Path, ...],
                                                 reference: Path) -> None:
    data = tf5.run_applied(PATCHED, paths, PATCH, reference)
    assert data["import"] == "ok" and data["same_object"] and data["new_class_kept"]
    assert len(data["equal"]) == 7 and all(data["equal"])
    assert data["shapes"][1] == [64, 20]  # (seqlen, dim // 2)
