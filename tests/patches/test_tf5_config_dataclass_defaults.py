"""tf5-config-dataclass-defaults: sglang 0.5.1's VILA config on transformers 5.24.

The real ``sglang/srt/models/vila.py`` is imported; with the patch its VILAConfig is
created, constructed, serialised and reloaded, and no other config class changes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ._transformers import FAKE_CUDA, run_applied, run_stock, sglang_paths_fixture

pytestmark = pytest.mark.wheels

PATCH = "tf5-config-dataclass-defaults"

CODE = FAKE_CUDA + """
import dataclasses, json, tempfile
import transformers
import sglang.srt.layers.quantization  # sglang 0.5.1 needs this first (own import cycle)
from sglang.srt.configs.deepseekvl2 import DeepseekVL2Config
result = {"transformers": transformers.__version__,
          "other_fields": sorted(f.name for f in dataclasses.fields(DeepseekVL2Config))}
try:
    import sglang.srt.models.vila as vila
    result["import"] = "ok"
except Exception as exc:
    result["import"] = f"{type(exc).__name__}: {exc}"
    vila = None
if vila is not None:
    VILAConfig = vila.VILAConfig
    fields = {f.name for f in dataclasses.fields(VILAConfig)}
    result["fields"] = sorted(fields & {"sub_configs", "text_config", "vision_config",
                                        "model_type", "hidden_size", "image_token_id"})
    result["class_attributes"] = [type(VILAConfig.sub_configs).__name__,
                                  sorted(VILAConfig.sub_configs),
                                  type(VILAConfig.text_config).__name__]
    default = VILAConfig()
    result["default"] = [default.model_type, default.hidden_size, default.image_token_id,
                         type(default.text_config).__name__,
                         type(default.vision_config).__name__]
    config = VILAConfig(
        text_config={"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
                     "num_key_value_heads": 2, "intermediate_size": 128},
        vision_config={"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2,
                       "intermediate_size": 64},
        hidden_size=64, mm_hidden_size=32, mm_projector_type="mlp_downsample_2x2_fix")
    folder = tempfile.mkdtemp()
    config.save_pretrained(folder)
    loaded = VILAConfig.from_pretrained(folder)
    result["reloaded"] = [loaded.hidden_size, loaded.mm_hidden_size, loaded.mm_projector_type,
                          loaded.text_config.hidden_size, loaded.text_config.num_hidden_layers,
                          loaded.vision_config.hidden_size]
import sglang_shims
result["state"] = sglang_shims.status()[PATCH]["state"]
print(json.dumps(result))
""".replace("PATCH", repr(PATCH))


paths = sglang_paths_fixture()


def test_stock_vila_class_cannot_be_created(paths: tuple[Path, ...]) -> None:
    assert run_stock(CODE, paths, PATCH)["import"] == (
        "ValueError: mutable default <class 'dict'> for field sub_configs is not allowed:"
        " use default_factory")


def test_patched_vila_config_behaves(paths: tuple[Path, ...]) -> None:
    stock = run_stock(CODE, paths, PATCH)
    data = run_applied(CODE, paths, PATCH)
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
