"""tf5-attn-mask-utils-removed: sglang 0.5.1's CLIP on transformers 5.24, masks as in 4.55.

The stand-in helpers are compared with transformers 4.55.2's own implementations on
random shapes (batch, query and past lengths, sliding windows, padding masks, three
dtypes): transformers 4.55.2 computes the reference tensors in one interpreter, the
patched sglang 0.5.1 process on transformers 5.24.0 computes the same cases through the
module ``sglang/srt/models/clip.py`` imported them from, and the results must be equal
element for element (``torch.equal``, ``None`` where 4.55 returns ``None``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from . import _transformers as tf5

pytestmark = pytest.mark.wheels

PATCH = "tf5-attn-mask-utils-removed"

# The same pseudo-random cases in both interpreters.
CASES = """
import random, torch
DTYPES = [torch.float32, torch.float16, torch.bfloat16]

def causal_cases():
    rng = random.Random(20240)
    for _ in range(60):
        yield dict(input_shape=(rng.randint(1, 4), rng.randint(1, 9)), dtype=rng.choice(DTYPES),
                   device="cpu", past_key_values_length=rng.choice([0, 0, rng.randint(1, 7)]),
                   sliding_window=rng.choice([None, None, rng.randint(1, 8)]))

def padding_cases():
    rng = random.Random(7)
    gen = torch.Generator().manual_seed(7)
    for _ in range(40):
        bsz, src = rng.randint(1, 4), rng.randint(1, 9)
        mask = torch.randint(0, 2, (bsz, src), generator=gen)
        mask = rng.choice([mask, mask.bool(), mask.float()])
        yield dict(mask=mask, dtype=rng.choice(DTYPES),
                   tgt_len=rng.choice([None, rng.randint(1, 9)]))

def compute(causal, padding):
    return ([causal(**c) for c in causal_cases()], [padding(**c) for c in padding_cases()])
"""

REFERENCE = CASES + """
import sys, transformers
assert transformers.__version__ == "4.55.2", transformers.__version__
from transformers.modeling_attn_mask_utils import (
    _create_4d_causal_attention_mask, _prepare_4d_attention_mask)
torch.save(compute(_create_4d_causal_attention_mask, _prepare_4d_attention_mask), sys.argv[1])
print("{}")
"""

PATCHED = tf5.FAKE_CUDA + CASES + """
import json, sys, transformers
result = {"transformers": transformers.__version__}
""" + tf5.import_attempt("sglang.srt.models.clip", "clip") + """
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
    result["causal"] = [same(a, b) for a, b in zip(ours[0], reference[0])]
    result["causal_none"] = sum(r is None for r in reference[0])
    result["padding"] = [same(a, b) for a, b in zip(ours[1], reference[1])]
    result["registered"] = transformers.modeling_attn_mask_utils is mask_utils
    try:
        from transformers.modeling_attn_mask_utils import AttentionMaskConverter  # noqa: F401
    except ImportError as exc:
        result["other_import"] = str(exc)
    try:
        mask_utils.AttentionMaskConverter
    except AttributeError as exc:
        result["other_attribute"] = str(exc)
""" + tf5.end_with_state(PATCH)

reference = tf5.reference_fixture(REFERENCE, "masks")
paths = tf5.sglang_paths_fixture()


def test_stock_clip_does_not_import(paths: tuple[Path, ...], reference: Path) -> None:
    assert tf5.run_stock(PATCHED, paths, PATCH, reference)["import"] == \
        "ModuleNotFoundError: No module named 'transformers.modeling_attn_mask_utils'"


def test_patched_masks_equal_transformers_4_55(paths: tuple[Path, ...], reference: Path) -> None:
    data = tf5.run_applied(PATCHED, paths, PATCH, reference)
    assert data["import"] == "ok"
    assert data["registered"]
    assert len(data["causal"]) == 60 and all(data["causal"])
    assert 0 < data["causal_none"] < 60  # single-token queries without a window: None in both
    assert len(data["padding"]) == 40 and all(data["padding"])
    # the rest of the removed module stays missing, with errors that say why
    assert "sglang-shims patch tf5-attn-mask-utils-removed" in data["other_import"]
    assert "provides only _create_4d_causal_attention_mask" in data["other_attribute"]
