"""tf5-config-dataclass-defaults: sglang 0.5.1's VILA config on transformers 5.24.

The real ``sglang/srt/models/vila.py`` is imported; with the patch its VILAConfig is
created, constructed, serialised and reloaded, and no other config class changes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ..support.patch_runs import run_applied, run_stock
from ..support.programs import program
from ..support.transformers5 import TRANSFORMERS5, sglang_paths_fixture

pytestmark = pytest.mark.wheels

PATCH = "tf5-config-dataclass-defaults"

CODE = program("patches/tf5_config_dataclass_defaults")

paths = sglang_paths_fixture()


def test_stock_vila_class_cannot_be_created(paths: tuple[Path, ...]) -> None:
    assert run_stock(CODE, paths, PATCH, transformers=TRANSFORMERS5)["import"] == (
        "ValueError: mutable default <class 'dict'> for field sub_configs is not allowed:"
        " use default_factory")


def test_patched_vila_config_behaves(paths: tuple[Path, ...]) -> None:
    stock = run_stock(CODE, paths, PATCH, transformers=TRANSFORMERS5)
    data = run_applied(CODE, paths, PATCH, transformers=TRANSFORMERS5)
    assert data["import"] == "ok", json.dumps(data)
    # the rejected three are plain class attributes again; the rest stay dataclass fields
    assert data["fields"] == ["hidden_size", "image_token_id", "model_type"]
    assert data["class_attributes"] == ["dict", ["text_config", "vision_config"],
                                        "Qwen2Config"]
    assert data["default"] == ["vila", 1536, 151649, "Qwen2Config", "SiglipVisionConfig"]
    assert data["reloaded"] == [64, 32, "mlp_downsample_2x2_fix", 64, 2, 32]
    # other sglang config classes are untouched
    assert data["other_fields"] == stock["other_fields"]
    assert "vision_config" in data["other_fields"]
