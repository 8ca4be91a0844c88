"""The real sglang 0.5.1 wheel builds its ModelConfig with no sgl_kernel installed: the
fallback stands in, and status(), the report on disk (before the process exits) and
``sglang-shims status`` name the model and, per op, who serves it.

Tiny local ``config.json`` files: a dense Qwen3, a Qwen3-MoE, a block-FP8 Qwen3 and an AWQ
Qwen3.  The expected verdicts are written here from docs/fallback-ops.md (0.5.1 sums MoE
experts with its own Triton kernel, so ``moe_sum_reduce`` is not called from sgl_kernel;
AWQ's kernels are outside the fallback's op set).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from ..support.programs import FAKE_CUDA
from ..support.run import need, run_python

pytestmark = pytest.mark.wheels

BASE = {"hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4,
        "num_key_value_heads": 2, "num_hidden_layers": 2, "vocab_size": 256,
        "max_position_embeddings": 512, "rms_norm_eps": 1e-6, "hidden_act": "silu",
        "head_dim": 16, "torch_dtype": "bfloat16", "rope_theta": 10000.0,
        "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3"}
CONFIGS = {
    "dense": BASE,
    "moe": {**BASE, "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe",
            "num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 32,
            "decoder_sparse_step": 1, "norm_topk_prob": True, "mlp_only_layers": []},
    "fp8": {**BASE, "quantization_config": {"quant_method": "fp8", "activation_scheme":
                                            "dynamic", "weight_block_size": [128, 128]}},
    "awq": {**BASE, "quantization_config": {"quant_method": "awq", "bits": 4,
                                            "group_size": 128, "zero_point": True}},
}
DENSE = {"rmsnorm": "ours", "fused_add_rmsnorm": "ours",
         "apply_rope_with_cos_sin_cache_inplace": "ours", "silu_and_mul": "ours"}

PROGRAM = FAKE_CUDA + """
import json, os, sys
from sglang.srt.configs.model_config import ModelConfig
errors = {}
for name in NAMES:
    try:
        ModelConfig(model_path=os.path.join(ROOT, name))
    except BaseException as exc:
        errors[name] = f"{type(exc).__name__}: {exc}"[:300]
import sglang_shims
entry = sglang_shims.status()["sgl-kernel-triton-fallback"]
report = os.path.join(os.environ["SGLANG_SHIMS_REPORT_DIR"], f"{os.getpid()}.json")
with open(report) as handle:  # read before exit: the at-exit report must not be needed
    on_disk = json.load(handle)["patches"]["sgl-kernel-triton-fallback"]
print(json.dumps({"errors": errors, "state": entry["state"],
                  "models": entry["details"].get("models"),
                  "on_disk": on_disk["details"].get("models")}))
"""


def test_real_sglang_model_config_is_judged(tmp_path: Path,
                                           sglang_release: Callable[[str], Path]) -> None:
    for module in ("torch", "transformers"):
        need(module)
    root = tmp_path / "models"
    for name, config in CONFIGS.items():
        (root / name).mkdir(parents=True)
        (root / name / "config.json").write_text(json.dumps(config))
    reports = tmp_path / "reports"
    code = PROGRAM.replace("NAMES", repr(sorted(CONFIGS))).replace("ROOT", repr(str(root)))
    result = run_python(code, paths=(sglang_release("0.5.1"),), timeout=600,
                        env={"SGLANG_SHIMS_REPORT_DIR": str(reports)})
    assert result.returncode == 0, result.stderr[-3000:]
    data = json.loads(result.stdout.strip().splitlines()[-1])
    assert data["errors"] == {} and data["state"] == "applied"
    models = data["models"]
    assert data["on_disk"] == models
    key = {name: str(root / name) for name in CONFIGS}
    assert set(models) == set(key.values())
    assert models[key["dense"]]["ops"] == DENSE
    assert models[key["dense"]]["architecture"] == "Qwen3ForCausalLM"
    moe = models[key["moe"]]
    assert moe["architecture"] == "Qwen3MoeForCausalLM" and moe["would_fail"] == []
    assert moe["ops"] == {**DENSE, "topk_softmax": "ours", "moe_align_block_size": "ours",
                          "moe_sum_reduce": "not called: sglang 0.5.1 does not call it from"
                                            " sgl_kernel"}
    fp8 = models[key["fp8"]]
    assert fp8["quantization"] == "fp8" and fp8["would_fail"] == []
    assert fp8["ops"] == {**DENSE, "sgl_per_token_group_quant_fp8": "ours",
                          "fp8_blockwise_scaled_mm": "ours"}
    awq = models[key["awq"]]
    # sglang's own choice on the (faked) H100 is the Marlin AWQ kernels: recorded as chosen
    assert awq["quantization"] == "awq_marlin" and awq["unsupported"]
    warnings = [line for line in result.stderr.splitlines() if "sgl-kernel-triton-fallback:"
                " model" in line]
    assert len(warnings) == 1 and key["awq"] in warnings[0], result.stderr[-3000:]

    from sglang_shims.cli import status as cli_status

    lines = [line for line in cli_status.aggregate(reports).text().splitlines()
             if line.startswith("model ")]
    assert len(lines) == len(CONFIGS), lines
    assert any(line.startswith(f"model {key['fp8']} (Qwen3ForCausalLM, quantization fp8)")
               and "ours: apply_rope_with_cos_sin_cache_inplace, fp8_blockwise_scaled_mm," in line
               for line in lines), lines


HYBRID = FAKE_CUDA + """
import json, os
from sglang.srt.configs.model_config import ModelConfig
for name in ("moe", "fp8"):
    ModelConfig(model_path=os.path.join(ROOT, name))
import sglang_shims
print(json.dumps(sglang_shims.status()["sgl-kernel-missing-symbols"]))
"""


def test_real_sglang_on_a_newer_kernel_is_judged_by_the_hybrid(
        tmp_path: Path, sglang_release: Callable[[str], Path],
        standin_kernel: Callable[..., Path]) -> None:
    """sglang 0.5.1 on sglang-kernel 0.4.5's export surface: the kernel serves MoE routing
    and alignment and per-group FP8 quantisation; 0.4.0 dropped
    apply_rope_with_cos_sin_cache_inplace (an adapter to rotary_embedding) and
    fp8_blockwise_scaled_mm (ours)."""
    for module in ("torch", "transformers"):
        need(module)
    from sglang_shims.testing.standin import ops_faked_by

    root = tmp_path / "models"
    for name in ("moe", "fp8"):
        (root / name).mkdir(parents=True)
        (root / name / "config.json").write_text(json.dumps(CONFIGS[name]))
    sglang = sglang_release("0.5.1")
    kernel = standin_kernel("0.4.5", torch_ops=ops_faked_by(sglang))
    result = run_python(HYBRID.replace("ROOT", repr(str(root))), paths=(sglang, kernel),
                        timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    entry = json.loads(result.stdout.strip().splitlines()[-1])
    assert entry["state"] == "applied"
    moe, fp8 = (entry["details"]["models"][str(root / n)] for n in ("moe", "fp8"))
    assert moe["ops"]["topk_softmax"] == moe["ops"]["moe_align_block_size"] == "real kernel"
    assert moe["ops"]["apply_rope_with_cos_sin_cache_inplace"].startswith("adapter: ")
    assert fp8["ops"]["sgl_per_token_group_quant_fp8"] == "real kernel"
    assert fp8["ops"]["fp8_blockwise_scaled_mm"].startswith("ours")
    assert moe["would_fail"] == fp8["would_fail"] == []


def test_real_sglang_0523_judges_while_model_config_is_importing(
        tmp_path: Path, pypi_release: Callable[[str, str], Path]) -> None:
    """sglang 0.5.23 imports sgl_kernel from inside model_config's own body, so the patch
    applies before ModelConfig exists (the other order from 0.5.1's).  Its dense path runs
    RoPE as sglang's own JIT kernel and its pin (sglang-kernel 0.4.10) has neither
    apply_rope_with_cos_sin_cache_inplace nor fp8_blockwise_scaled_mm: not failures."""
    for module in ("torch", "fastapi"):
        need(module)
    from sglang_shims.testing import wheels

    from ..support.stacks import FOR_PY312
    from ..support.stacks import LATE_COMMON as COMMON
    from ..support.stacks import LATE_RELEASES as RELEASES

    try:
        sglang = wheels.unpack("sglang", "0.5.23", pip_args=FOR_PY312)
    except RuntimeError as exc:
        pytest.fail(str(exc))
    extra = tuple(pypi_release(d, v) for d, v in (*RELEASES["0.5.23"], *COMMON))
    root = tmp_path / "models"
    for name in ("dense", "fp8"):
        (root / name).mkdir(parents=True)
        (root / name / "config.json").write_text(json.dumps(CONFIGS[name]))
    code = PROGRAM.replace("NAMES", repr(["dense", "fp8"])).replace("ROOT", repr(str(root)))
    result = run_python(code, paths=(*extra, sglang), timeout=600,
                        env={"SGLANG_SHIMS_REPORT_DIR": str(tmp_path / "reports")})
    assert result.returncode == 0, result.stderr[-3000:]
    data = json.loads(result.stdout.strip().splitlines()[-1])
    assert data["errors"] == {} and data["state"] == "applied"
    assert data["on_disk"] == data["models"]
    dense, fp8 = (data["models"][str(root / n)] for n in ("dense", "fp8"))
    assert dense["ops"]["rmsnorm"] == dense["ops"]["silu_and_mul"] == "ours"
    assert dense["ops"]["apply_rope_with_cos_sin_cache_inplace"].startswith(
        "not called: sglang-kernel==0.4.10")
    assert fp8["ops"]["sgl_per_token_group_quant_fp8"] == "ours"
    # 0.5.23's block-FP8 linear no longer reaches sgl_kernel's matmul (the op set read from
    # its wheel): not called, whatever the kernel
    assert fp8["ops"]["fp8_blockwise_scaled_mm"].startswith(
        "not called: sglang 0.5.23 does not call it from sgl_kernel")
    assert dense["would_fail"] == fp8["would_fail"] == []
    assert "sgl-kernel-triton-fallback: model" not in result.stderr  # nothing to warn about
