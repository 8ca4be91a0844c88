"""tf-config-register-collision: sglang 0.5.19's config registry on transformers 5.24.

sglang 0.5.19 pins transformers 5.12.1; transformers 5.13+ defines ``qwen3_asr`` itself,
and sglang.srt.configs (imported by every sglang process) registers its own.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ..support.patch_runs import run_applied, run_stock
from ..support.programs import program
from ..support.transformers5 import TRANSFORMERS5, sglang_paths_fixture

pytestmark = pytest.mark.wheels

PATCH = "tf-config-register-collision"

CODE = program("patches/tf_config_register_collision")


paths = sglang_paths_fixture(sglang="0.5.19", kernel=False)


def test_stock_sglang_configs_do_not_import(paths: tuple[Path, ...]) -> None:
    assert run_stock(CODE, paths, PATCH, transformers=TRANSFORMERS5)["import"] == (
        "ValueError: 'qwen3_asr' is already used by a Transformers config, pick another name.")


def test_patched_sglang_keeps_its_qwen3_asr_config(paths: tuple[Path, ...]) -> None:
    data = run_applied(CODE, paths, PATCH, transformers=TRANSFORMERS5)
    assert data["import"] == "ok"
    assert data["registered"] == [True, True]
    # AutoConfig now builds sglang's class (the thinker_config layout its model reads),
    # as sglang 0.5.20's exist_ok=True registration does
    assert data["auto"] == ["sglang.srt.configs.qwen3_asr", "Qwen3ASRThinkerConfig",
                            "transformers.models.qwen3_asr.configuration_qwen3_asr"]
    assert data["others"] == "'llama' is already used by a Transformers config, pick another name."
