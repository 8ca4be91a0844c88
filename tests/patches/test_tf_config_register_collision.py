"""tf-config-register-collision: sglang 0.5.19's config registry on transformers 5.24.

sglang 0.5.19 pins transformers 5.12.1; transformers 5.13+ defines ``qwen3_asr`` itself,
and sglang.srt.configs (imported by every sglang process) registers its own.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ._transformers import (
    end_with_state,
    import_attempt,
    run_applied,
    run_stock,
    sglang_paths_fixture,
)

pytestmark = pytest.mark.wheels

PATCH = "tf-config-register-collision"

CODE = """
import json, tempfile
import transformers
from transformers import AutoConfig, LlamaConfig
result = {"transformers": transformers.__version__}
""" + import_attempt("sglang.srt.configs") + """
if result["import"] == "ok":
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING
    from transformers.models.qwen3_asr.configuration_qwen3_asr import (
        Qwen3ASRConfig as NativeQwen3ASRConfig)
    from sglang.srt.configs.qwen3_asr import Qwen3ASRConfig, Qwen3ASRThinkerConfig
    result["registered"] = [CONFIG_MAPPING["qwen3_asr"] is Qwen3ASRConfig,
                            CONFIG_MAPPING["qwen3_asr_thinker"] is Qwen3ASRThinkerConfig]
    folder = tempfile.mkdtemp()
    Qwen3ASRConfig().save_pretrained(folder)
    loaded = AutoConfig.from_pretrained(folder)
    result["auto"] = [type(loaded).__module__, type(loaded.thinker_config).__name__,
                      NativeQwen3ASRConfig.__module__]
    # anyone else's registration over a native model type is still refused
    class MyLlamaConfig(LlamaConfig):
        model_type = "llama"
    try:
        AutoConfig.register("llama", MyLlamaConfig)
        result["others"] = "registered"
    except ValueError as exc:
        result["others"] = str(exc)
""" + end_with_state(PATCH)


paths = sglang_paths_fixture(sglang="0.5.19", kernel=False)


def test_stock_sglang_configs_do_not_import(paths: tuple[Path, ...]) -> None:
    assert run_stock(CODE, paths, PATCH)["import"] == (
        "ValueError: 'qwen3_asr' is already used by a Transformers config, pick another name.")


def test_patched_sglang_keeps_its_qwen3_asr_config(paths: tuple[Path, ...]) -> None:
    data = run_applied(CODE, paths, PATCH)
    assert data["import"] == "ok"
    assert data["registered"] == [True, True]
    # AutoConfig now builds sglang's class (the thinker_config layout its model reads),
    # as sglang 0.5.20's exist_ok=True registration does
    assert data["auto"] == ["sglang.srt.configs.qwen3_asr", "Qwen3ASRThinkerConfig",
                            "transformers.models.qwen3_asr.configuration_qwen3_asr"]
    assert data["others"] == "'llama' is already used by a Transformers config, pick another name."
