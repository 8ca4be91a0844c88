"""tf5-vision-rope-renamed: sglang 0.5.1's Qwen2.5-VL on transformers 5.24, RoPE as in 4.55.

transformers 4.55.2's own ``Qwen2_5_VisionRotaryEmbedding`` computes the reference
frequencies in one interpreter; the patched sglang 0.5.1 process on transformers 5.24.0
computes the same cases with the class ``sglang/srt/models/qwen2_5_vl.py`` imported, and
buffers and outputs must be equal element for element.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ..support import transformers5 as tf5
from ..support.patch_runs import run_applied
from ..support.programs import patch_programs

pytestmark = pytest.mark.wheels

PATCH = "tf5-vision-rope-renamed"

REFERENCE, PATCHED = patch_programs(PATCH, "reference", "patched")

reference, paths = tf5.comparison_fixtures(REFERENCE, "qwen_rope")


def test_stock_qwen2_5_vl_does_not_import(paths: tuple[Path, ...]) -> None:
    tf5.check_stock_import_fails(PATCHED, paths, PATCH, "Qwen2_5_VisionRotaryEmbedding",
                                 "transformers.models.qwen2_5_vl.modeling_qwen2_5_vl")


def test_patched_rotary_equals_transformers_4_55(paths: tuple[Path, ...],
                                                 reference: Path) -> None:
    data = run_applied(PATCHED, paths, PATCH, reference, transformers=tf5.TRANSFORMERS5)
    assert data["import"] == "ok" and data["same_object"] and data["new_class_kept"]
    assert len(data["equal"]) == 7 and all(data["equal"])
    assert data["shapes"][1] == [64, 20]  # (seqlen, dim // 2)
