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

from ..support import transformers5 as tf5
from ..support.patch_runs import run_applied, run_stock
from ..support.programs import patch_programs

pytestmark = pytest.mark.wheels

PATCH = "tf5-attn-mask-utils-removed"

REFERENCE, PATCHED = patch_programs(PATCH, "reference", "patched")

reference, paths = tf5.comparison_fixtures(REFERENCE, "masks")


def test_stock_clip_does_not_import(paths: tuple[Path, ...]) -> None:
    data = run_stock(PATCHED, paths, PATCH, transformers=tf5.TRANSFORMERS5)
    assert data["import"] == \
        "ModuleNotFoundError: No module named 'transformers.modeling_attn_mask_utils'"


def test_patched_masks_equal_transformers_4_55(paths: tuple[Path, ...], reference: Path) -> None:
    data = run_applied(PATCHED, paths, PATCH, reference, transformers=tf5.TRANSFORMERS5)
    assert data["import"] == "ok"
    assert data["registered"]
    assert len(data["causal"]) == 60 and all(data["causal"])
    assert 0 < data["causal_none"] < 60  # single-token queries without a window: None in both
    assert len(data["padding"]) == 40 and all(data["padding"])
    # the rest of the removed module stays missing, with errors that say why
    assert "sglang-shims patch tf5-attn-mask-utils-removed" in data["other_import"]
    assert "provides only _create_4d_causal_attention_mask" in data["other_attribute"]
