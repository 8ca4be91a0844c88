"""tf54-qwen3-5-moe-subconfig-dicts: a Qwen3.5 MoE config.json through sglang's get_config.

sglang 0.5.10 (the real wheel) loads a small qwen3_5_moe config.json (the layout of the
Qwen3.5 MoE checkpoints: a text_config and a vision_config) on transformers 5.5.0 and
5.24.0.  Stock, transformers' generated dataclass __init__ leaves both sub-configs dicts
(sglang PR 22839); patched they are Qwen3_5MoeVisionConfig / Qwen3_5MoeTextConfig, and
every value of the loaded config equals what sglang 0.5.11 -- the release that fixed it in
its own source -- loads from the same file on the same transformers.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ..support.patch_runs import run_json
from ..support.programs import program
from ..support.transformers5 import transformers_paths

pytestmark = pytest.mark.wheels

PATCH = "tf54-qwen3-5-moe-subconfig-dicts"

CONFIG = {
    "architectures": ["Qwen3_5MoeForConditionalGeneration"], "model_type": "qwen3_5_moe",
    "image_token_id": 248056, "video_token_id": 248057, "vision_start_token_id": 248053,
    "vision_end_token_id": 248054, "tie_word_embeddings": False,
    "text_config": {
        "model_type": "qwen3_5_moe_text", "hidden_size": 64, "num_hidden_layers": 4,
        "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
        "vocab_size": 1000, "num_experts": 8, "num_experts_per_tok": 2,
        "moe_intermediate_size": 32, "shared_expert_intermediate_size": 32,
        "full_attention_interval": 2, "linear_num_key_heads": 2, "linear_num_value_heads": 4,
        "linear_key_head_dim": 16, "linear_value_head_dim": 16,
        "rope_parameters": {"rope_type": "default", "rope_theta": 10000000,
                            "mrope_section": [4, 2, 2], "mrope_interleaved": True}},
    "vision_config": {
        "model_type": "qwen3_5_moe", "depth": 2, "hidden_size": 32, "intermediate_size": 64,
        "num_heads": 2, "out_hidden_size": 64, "patch_size": 16, "spatial_merge_size": 2,
        "temporal_patch_size": 2, "num_position_embeddings": 64,
        "deepstack_visual_indexes": []},
}

CODE = program("patches/tf54_qwen3_5_moe_subconfig_dicts")


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("qwen3_5_moe")
    (folder / "config.json").write_text(json.dumps(CONFIG), encoding="utf-8")
    return folder


@pytest.mark.parametrize("transformers", ["5.5.0", "5.24.0"])
def test_sub_configs_are_config_objects_as_in_0_5_11(
        transformers: str, model_dir: Path, sglang_release: Callable[[str], Path],
        pypi_release: Callable[[str, str], Path]) -> None:
    tf = transformers_paths(pypi_release, transformers)

    def run(sglang: str, **env: str) -> dict[str, Any]:
        return run_json(CODE, (*tf, sglang_release(sglang)), env, args=(str(model_dir),),
                        timeout=300, transformers=transformers)

    stock = run("0.5.10", SGLANG_SHIMS_DISABLE=PATCH)
    assert stock["state"] == "disabled" and stock["class"] == "Qwen3_5MoeConfig"
    assert stock["vision_config"] == "dict" and stock["text_config"] == "dict", stock

    patched = run("0.5.10")
    assert patched["state"] == "applied", patched
    assert patched["vision_config"] == "Qwen3_5MoeVisionConfig"
    assert patched["text_config"] == "Qwen3_5MoeTextConfig"

    fixed = run("0.5.11")  # sglang's own fix; the patch is out of range there
    assert fixed["state"] == "not-applicable", fixed
    for key in ("vision_config", "text_config"):
        assert patched[key] == fixed[key]
        assert patched[key + "_values"] == fixed[key + "_values"], key
