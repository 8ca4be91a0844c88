"""tf-config-register-collision: sglang 0.5.19's config registry on transformers 5.24.

sglang 0.5.19 pins transformers 5.12.1; transformers 5.13+ defines ``qwen3_asr`` itself,
and sglang.srt.configs (imported by every sglang process) registers its own.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ._transformers import run_json, sglang_on_transformers5

pytestmark = pytest.mark.wheels

PATCH = "tf-config-register-collision"

CODE = """
import json, tempfile
import transformers
from transformers import AutoConfig, LlamaConfig
result = {"transformers": transformers.__version__}
try:
    import sglang.srt.configs
    result["import"] = "ok"
except Exception as exc:
    result["import"] = f"{type(exc).__name__}: {exc}"
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
import sglang_shims
result["state"] = sglang_shims.status()[PATCH]["state"]
print(json.dumps(result))
""".replace("PATCH", repr(PATCH))


@pytest.fixture(scope="module")
def paths(sglang_release: Callable[[str], Path],
          pypi_release: Callable[[str, str], Path]) -> tuple[Path, ...]:
    return sglang_on_transformers5(sglang_release, pypi_release, sglang="0.5.19")


def run(paths: tuple[Path, ...], **env: str) -> dict[str, Any]:
    return run_json(CODE, paths, env)


def test_stock_sglang_configs_do_not_import(paths: tuple[Path, ...]) -> None:
    data = run(paths, SGLANG_SHIMS_DISABLE=PATCH)
    assert data["state"] == "disabled"
    assert data["import"] == ("ValueError: 'qwen3_asr' is already used by a Transformers"
                              " config, pick another name.")


def test_patched_sglang_keeps_its_qwen3_asr_config(paths: tuple[Path, ...]) -> None:
    data = run(paths)
    assert data["state"] == "applied" and data["import"] == "ok"
    assert data["registered"] == [True, True]
    # AutoConfig now builds sglang's class (the thinker_config layout its model reads),
    # as sglang 0.5.20's exist_ok=True registration does
    assert data["auto"] == ["sglang.srt.configs.qwen3_asr", "Qwen3ASRThinkerConfig",
                            "transformers.models.qwen3_asr.configuration_qwen3_asr"]
    assert data["others"] == "'llama' is already used by a Transformers config, pick another name."
