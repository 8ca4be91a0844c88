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

from ..support import transformers5 as tf5
from ..support.patch_runs import run_applied
from ..support.programs import patch_programs

pytestmark = pytest.mark.wheels

PATCH = "tf5-pixtral-rope-renamed"
paths = tf5.sglang_paths_fixture()  # sglang 0.5.1 on transformers 5

REFERENCE, PATCHED = patch_programs(PATCH, "reference", "patched")

reference = tf5.reference_fixture(REFERENCE, "pixtral_rope")


def test_stock_pixtral_does_not_import(paths: tuple[Path, ...]) -> None:
    tf5.check_stock_import_fails(PATCHED, paths, PATCH, "PixtralRotaryEmbedding",
                                 "transformers.models.pixtral.modeling_pixtral")


def test_patched_rotary_equals_transformers_4_55(paths: tuple[Path, ...],
                                                 reference: Path) -> None:
    data = run_applied(PATCHED, paths, PATCH, reference, disable="tf5-rope-theta-moved",
                       transformers=tf5.TRANSFORMERS5)
    assert data["import"] == "ok"
    assert data["rope_theta_patch"] == "disabled"  # the base comes from rope_parameters
    assert data["same_objects"] and data["new_class_kept"]
    assert len(data["equal"]) == 6 and all(data["equal"])
    assert data["cos_dtypes"] == ["torch.float32", "torch.bfloat16"]
