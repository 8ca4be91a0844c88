"""The ops a model reaches (``kernels.serving.model_ops``), as docs/fallback-ops.md reads
them from sglang, per model family; and ``doctor --model-path``, which reports them:
``ok`` when the fallback has every op, a warning naming what it lacks, an unreadable
config a warning, never an exception or a hang."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sglang_shims import kernels
from sglang_shims.cli.doctor.checks.model_coverage import check_model
from sglang_shims.cli.doctor.finding import Finding
from sglang_shims.kernels.serving.model_ops import ops_for_config

QWEN3 = {"model_type": "qwen3", "hidden_act": "silu"}
QWEN3_MOE = {"model_type": "qwen3_moe", "hidden_act": "silu", "num_experts": 128}
DEEPSEEK_V3 = {"model_type": "deepseek_v3", "hidden_act": "silu", "n_routed_experts": 256,
               "n_group": 8, "topk_group": 4, "topk_method": "noaux_tc",
               "scoring_func": "sigmoid",
               "quantization_config": {"quant_method": "fp8", "activation_scheme": "dynamic",
                                       "weight_block_size": [128, 128]}}
FP8_CHANNEL = {"model_type": "llama", "hidden_act": "silu",
               "quantization_config": {"quant_method": "fp8", "activation_scheme": "dynamic"}}
AWQ = {"model_type": "llama", "quantization_config": {"quant_method": "awq", "bits": 4}}
DENSE_OPS = {"rmsnorm", "fused_add_rmsnorm", "apply_rope_with_cos_sin_cache_inplace",
             "silu_and_mul"}


@pytest.mark.parametrize(("config", "extra"), [
    (QWEN3, set()),
    (QWEN3_MOE, {"topk_softmax", "moe_align_block_size", "moe_sum_reduce"}),
    (DEEPSEEK_V3, {"moe_fused_gate", "moe_align_block_size", "moe_sum_reduce",
                   "sgl_per_token_group_quant_fp8", "fp8_blockwise_scaled_mm"}),
    (FP8_CHANNEL, {"sgl_per_token_quant_fp8", "sgl_per_tensor_quant_fp8", "fp8_scaled_mm"}),
    ({"text_config": QWEN3_MOE, "model_type": "vl"},
     {"topk_softmax", "moe_align_block_size", "moe_sum_reduce"}),
], ids=["qwen3", "qwen3-moe", "deepseek-v3-fp8", "fp8-channel", "text-config"])
def test_model_ops(config: dict[str, object], extra: set[str]) -> None:
    """The ops each family reaches, as docs/fallback-ops.md reads them from sglang; the
    fallback provides them all."""
    found = ops_for_config(config)
    assert set(found.ops) == DENSE_OPS | extra
    assert found.missing() == [] and found.unsupported == []


def _doctor_model(folder: Path, config: object) -> Finding:
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    (finding,) = check_model(str(folder))
    return finding


def test_doctor_model_ops(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ok when the fallback has every op; a warning naming the op it lacks, and the
    quantisation methods outside its scope."""
    ok = _doctor_model(tmp_path, DEEPSEEK_V3)
    assert ok.level == "ok" and "moe_fused_gate" in ok.detail
    awq = _doctor_model(tmp_path, AWQ)
    assert awq.level == "warn" and "quantization 'awq'" in awq.detail
    monkeypatch.delitem(kernels._WHERE, "fp8_blockwise_scaled_mm")
    lacking = _doctor_model(tmp_path, DEEPSEEK_V3)
    assert lacking.level == "warn"
    assert "the fallback lacks fp8_blockwise_scaled_mm" in lacking.detail


def test_doctor_model_ops_unreadable(tmp_path: Path) -> None:
    """A missing config, a folder named config.json, a file over 1 MiB, a FIFO, a JSON list:
    one warning each, never an exception or a hang."""
    base = tmp_path
    (base / "dir" / "config.json").mkdir(parents=True)
    (base / "big").mkdir()
    (base / "big" / "config.json").write_text("{" + " " * (1 << 20) + "}", encoding="utf-8")
    (base / "fifo").mkdir()
    os.mkfifo(base / "fifo" / "config.json")  # opening it for reading must not block
    (base / "list").mkdir()
    (base / "list" / "config.json").write_text("[1, 2]", encoding="utf-8")
    for folder in (base / "none", base / "dir" / "config.json", base / "big", base / "fifo",
                   base / "list"):
        (finding,) = check_model(str(folder))
        assert finding.level == "warn" and "could not read" in finding.detail, folder


def test_doctor_cli_model_path(tmp_path: Path) -> None:
    """``sglang-shims doctor --no-probe --model-path`` prints the model-ops finding."""
    (tmp_path / "config.json").write_text(json.dumps(QWEN3_MOE), encoding="utf-8")
    out = subprocess.run([sys.executable, "-m", "sglang_shims", "doctor", "--no-probe",
                          "--json", "--model-path", str(tmp_path)], capture_output=True,
                         text=True, check=False)
    findings = json.loads(out.stdout)["findings"]
    ours = [f for f in findings if f["check"] == "model-ops"]
    assert len(ours) == 1 and ours[0]["level"] == "ok", out.stderr[-2000:]
    assert "topk_softmax" in ours[0]["detail"]


def test_an_op_is_called_by_the_releases_the_wheels_show_and_unknown_elsewhere() -> None:
    """``moe_sum_reduce`` came from sgl-kernel from 0.5.4.post2 on (sglang's own Triton
    kernel before); a release or an op the data does not cover is answered None, and
    only a known "not called" drops an op."""
    from sglang_shims.kernels.serving.model_ops import not_called
    from sglang_shims.kernels.surface import opset

    assert opset.called("moe_sum_reduce", "0.5.4.post1") is False
    assert opset.called("moe_sum_reduce", "0.5.4.post2") is True
    assert opset.called("moe_sum_reduce", "99.0.0") is None
    assert opset.called("no_such_op", "0.5.4.post2") is None
    assert not_called(["moe_sum_reduce", "no_such_op"], "0.5.4.post1") == ["moe_sum_reduce"]
    assert not_called(["moe_sum_reduce"], None) == []
