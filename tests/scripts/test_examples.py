"""The pure parts of examples/e2e_serve.py (the GPU run itself is a device job)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from ..support.programs import program
from ..support.run import REPO, need, run_python
from ..support.scripts import load_script
from ..support.stacks import no_kernel_paths, unpack_py312

EXAMPLES = REPO / "examples"
EXAMPLE = EXAMPLES / "e2e_serve.py"


def _load(name: str) -> ModuleType:
    return load_script(f"examples/{name}.py", name, keep=True)


@pytest.fixture(scope="module")
def models() -> ModuleType:
    """examples/_e2e_models.py, which e2e_serve imports as a sibling (the script's folder
    is first on sys.path when it runs; here it is registered by name)."""
    return _load("_e2e_models")


@pytest.fixture(scope="module")
def e2e(models: ModuleType) -> ModuleType:
    _load("_e2e_trace")  # its other sibling
    return _load("e2e_serve")


REF = [{"tokens": [5, 6, 7], "margins": [2.0, 1e-4, 3.0]},
       {"tokens": [1, 2, 3], "margins": [0.5, 0.5, 0.5]},
       {"tokens": [9, 9, 9], "margins": [4.0, 4.0, 4.0]}]


def test_compare_tells_ties_from_mismatches(e2e: ModuleType) -> None:
    got = [[5, 8, 8], [1, 2, 3], [9, 0, 9]]
    result = e2e.compare(got, REF)
    assert result["identical"] == 1
    assert result["near_tie_divergences"] == [
        {"prompt": 0, "first_difference": 1, "reference_margin": 1e-4}]
    assert result["mismatches"] == [{"prompt": 2, "first_difference": 1, "reference_margin": 4.0}]
    assert result["pass"] is False
    assert e2e.compare([[5, 8, 8], [1, 2, 3], [9, 9, 9]], REF)["pass"] is True


def test_compare_reports_a_wrong_length_as_such(e2e: ModuleType) -> None:
    # what sglang 0.5.1 returned without output-ids-prompt-tail: the prompt's tail first
    got = [[40, 41, 5, 6, 7], [1, 2, 3], [9, 9, 9]]
    result = e2e.compare(got, REF)
    assert result["identical"] == 2
    assert result["mismatches"] == [{"prompt": 0, "length": 5, "expected": 3}]
    assert result["near_tie_divergences"] == []
    assert result["pass"] is False


def test_markdown_lists_every_correctness_run_and_the_speed_ratios(e2e: ModuleType) -> None:
    def speed(rate: float) -> dict[str, object]:
        return {"batches": {"1": {"tok_per_s": [rate], "median_tok_per_s": rate,
                                  "step_ms_p50": 1.0, "step_ms_p99": 1.2,
                                  "steps_without_graph": 0}},
                "ttft_median_s": 0.01, "compiled_during_timing": 0}

    results = {
        "date": "2026-12-01", "gpu": "GPU", "torch": "2.11", "sglang": "0.5.17",
        "transformers": "5.17.0", "triton": "3.6.0", "sgl-kernel": None,
        "compared": e2e.WHAT_WAS_COMPARED["ignore"],
        "qwen3-reference": REF,
        "correctness_runs": ["none-qwen3-fp32", "none-qwen3-fp32-torch", "real-qwen3-bf16"],
        "none-qwen3-fp32": {"command": "launch",
                            "compare": e2e.compare([r["tokens"] for r in REF], REF)},
        "none-qwen3-fp32-torch": {"command": "launch", "error": "RuntimeError: boom"},
        "real-qwen3-bf16": {"command": "launch", "identical_to_real": None},
        "speed-none-triton": speed(200.0), "speed-none-torch": speed(100.0),
        "speed-real-aot": speed(400.0),
    }
    text = e2e.markdown(results)
    assert "| none-qwen3-fp32 | launch | 3/3 identical, 0 near-tie | - |" in text
    assert "| none-qwen3-fp32-torch | launch | no tokens, ERROR RuntimeError: boom" in text
    assert "qwen3-reference" not in text
    assert "compared: greedy tokens, EOS not special on either side" in text
    assert "| Triton tier / stock AOT | 0.50x | >= 1.0x |" in text
    assert "| Triton tier / eager tier | 2.00x | >= 1.3x |" in text
    assert "| speed-none-triton | 200.0 [200-200] | 1.0 / 1.2 | 0.01 | 0 | 0 |" in text


def test_server_flags_switch_cuda_graphs_and_backend(e2e: ModuleType) -> None:
    off = e2e.server_flags("triton", cuda_graphs=False)
    on = e2e.server_flags("torch_native", cuda_graphs=True)
    assert "--disable-cuda-graph" in off and "--cuda-graph-max-bs" not in off
    assert "--disable-cuda-graph" not in on
    assert on[on.index("--cuda-graph-max-bs") + 1] == "32"
    assert on[on.index("--attention-backend") + 1] == "torch_native"
    assert e2e.FLAGS[e2e.FLAGS.index("--attention-backend") + 1] == "triton"  # not mutated
    assert "--disable-prefill-cuda-graph" not in on  # sglang 0.5.1 has no such flag
    new = e2e.server_flags("triton", True, "0.5.17", max_bs=64, speed_log=True)
    assert new[new.index("--cuda-graph-max-bs") + 1] == "64"
    assert "--disable-prefill-cuda-graph" in new
    assert new[new.index("--decode-log-interval") + 1] == "1"
    assert new[new.index("--log-level") + 1] == "info"


def test_both_sides_treat_eos_alike(e2e: ModuleType) -> None:
    assert e2e.sampling_params(32) == {"temperature": 0.0, "max_new_tokens": 32,
                                       "ignore_eos": True}
    assert e2e.sampling_params(32, "min-new-tokens") == {
        "temperature": 0.0, "max_new_tokens": 32, "min_new_tokens": 32}
    assert set(e2e.WHAT_WAS_COMPARED) == {"ignore", "min-new-tokens"}


def test_step_times_come_from_the_schedulers_decode_lines(e2e: ModuleType) -> None:
    line = ("[t] Decode batch, #running-req: 8, #token: 9, token usage: 0.01, cuda graph: {g},"
            " gen throughput (token/s): {r}, #queue-req: 0\n")
    log = (line.format(g="True", r="100.00") + line.format(g="True", r="4000.00")
           + line.format(g="False", r="8000.00"))
    steps, no_graph = e2e.step_times(log, 8)  # the first line spans the prefill: dropped
    assert steps == [0.002, 0.001]
    assert no_graph == 1
    assert e2e.step_times(log, 4) == ([], 0)
    assert e2e.percentile([3.0, 1.0, 2.0], 50) == 2.0


# --- the MoE and FP8 models (examples/_e2e_models.py) ---------------------------------------


def test_split_fused_experts_gives_one_tensor_per_expert(models: ModuleType) -> None:
    torch = pytest.importorskip("torch")
    gate_up = torch.arange(2 * 6 * 3, dtype=torch.float32).reshape(2, 6, 3)  # [E, 2I, H]
    down = torch.arange(2 * 3 * 3, dtype=torch.float32).reshape(2, 3, 3)  # [E, H, I]
    router = torch.ones(2, 3)
    out = models.split_fused_experts({
        "model.layers.0.mlp.experts.gate_up_proj": gate_up,
        "model.layers.0.mlp.experts.down_proj": down, "model.layers.0.mlp.gate.weight": router})
    assert sorted(out) == sorted(
        [f"model.layers.0.mlp.experts.{e}.{p}_proj.weight" for e in (0, 1)
         for p in ("gate", "up", "down")] + ["model.layers.0.mlp.gate.weight"])
    assert out["model.layers.0.mlp.experts.1.gate_proj.weight"].tolist() == \
        gate_up[1, :3].tolist()  # the gate is the first half (transformers' chunk(2))
    assert out["model.layers.0.mlp.experts.1.up_proj.weight"].tolist() == gate_up[1, 3:].tolist()
    assert out["model.layers.0.mlp.experts.0.down_proj.weight"].tolist() == down[0].tolist()
    # the per-expert layout (transformers 4) passes through untouched
    same = {"model.layers.0.mlp.experts.0.gate_proj.weight": router}
    assert models.split_fused_experts(same).keys() == same.keys()


def test_fp8_weights_keep_each_block_within_e4m3_rounding(models: ModuleType) -> None:
    torch = pytest.importorskip("torch")
    gen = torch.Generator().manual_seed(0)
    w = torch.randn(256, 384, generator=gen)
    w[:128, 128:256] *= 50.0  # one block far larger: its scale must not leak into others
    q, scale = models.quantize_fp8(w, "block")
    assert q.dtype == torch.float8_e4m3fn and q.shape == w.shape
    assert scale.shape == (2, 3) and scale.dtype == torch.float32
    for i in range(2):
        for j in range(3):
            block = w[i * 128:(i + 1) * 128, j * 128:(j + 1) * 128]
            # the block's largest magnitude maps onto e4m3's largest value, 448
            assert float(scale[i, j]) == pytest.approx(float(block.abs().max()) / 448, rel=1e-6)
            assert float(q[i * 128:(i + 1) * 128, j * 128:(j + 1) * 128].float().abs().max()) \
                == 448.0
    back = models.dequantize_fp8(q, scale)
    # e4m3 keeps 3 mantissa bits: relative rounding error at most 2**-4 for normal values
    normal = (w.abs() / scale.repeat_interleave(128, 0).repeat_interleave(128, 1)) >= 2 ** -6
    assert ((back - w).abs() <= w.abs() * 2 ** -4 + 1e-12)[normal].all()
    qt, st = models.quantize_fp8(w, "tensor")
    assert st.shape == (1,) and float(st) == pytest.approx(float(w.abs().max()) / 448, rel=1e-6)
    assert torch.equal(models.dequantize_fp8(qt, st), qt.float() * float(st))
    with pytest.raises(ValueError, match="multiple of 128"):
        models.quantize_fp8(torch.ones(100, 128), "block")


def test_fake_quant_rounds_each_group_on_its_own(models: ModuleType) -> None:
    torch = pytest.importorskip("torch")
    x = torch.tensor([[1.0, 0.3, -0.7, 0.001, 100.0, 3.0, -2.0, 0.5]])
    grouped = models.fake_quant(x, 4)
    # a group's absolute maximum survives exactly; the others are rounded to e4m3 steps
    assert grouped[0, 0] == 1.0 and grouped[0, 4] == 100.0
    # the second group's large value does not coarsen the first group (per group scales)
    assert float(grouped[0, 3]) == pytest.approx(0.001, rel=2 ** -4)
    # one scale for the row: 0.001 lands among e4m3's subnormals, far coarser
    per_token = models.fake_quant(x, 0)
    assert float(per_token[0, 3]) != pytest.approx(0.001, rel=2 ** -4)
    assert per_token[0, 4] == 100.0 and per_token.dtype == x.dtype
    assert torch.equal(models.fake_quant(grouped, 4), grouped)  # idempotent: already on grid


def test_each_model_names_its_activation_rounding(models: ModuleType) -> None:
    assert models.act_group("qwen3-fp8") == 128
    assert models.act_group("llama-fp8") == 0
    assert models.act_group("qwen3moe") is None and models.act_group("qwen3") is None
    assert models.is_quantised("model.layers.3.self_attn.q_proj.weight")
    assert models.is_quantised("model.layers.0.mlp.down_proj.weight")
    assert not models.is_quantised("lm_head.weight")
    assert not models.is_quantised("model.layers.0.mlp.gate.weight")  # MoE router
    assert not models.is_quantised("model.layers.0.input_layernorm.weight")


def test_listing_says_which_kernel_ops_the_fallback_lacks(models: ModuleType) -> None:
    rows = models.listing("llama-fp8", {"rmsnorm", "fused_add_rmsnorm", "sgl_per_token_quant_fp8"})
    by_op = {row.split(" | ")[2]: row for row in rows}
    assert "fallback RAISES" in by_op["`fp8_scaled_mm`"]
    assert "fallback implements it" in by_op["`sgl_per_token_quant_fp8`"]
    assert "sglang Triton |" in by_op["`decode/extend attention`"]  # not a kernel op
    assert "fallback" not in by_op["`decode/extend attention`"]


def test_forced_compare_counts_agreement_and_excuses_only_near_ties(e2e: ModuleType) -> None:
    ref = [{"tokens": [5, 6, 7, 8], "margins": [3.0, 0.2, 3.0, 3.0]}]
    assert e2e.forced_compare([[(5, 1.0), (9, 1.0), (7, 1.0), (8, 1.0)]], ref, 0.5, 0.7) == {
        "agreement": 0.75, "positions": 4, "floor": 0.7, "mismatches": [], "pass": True}
    below_floor = e2e.forced_compare([[(5, 1.0), (9, 1.0), (7, 1.0), (8, 1.0)]], ref, 0.5, 0.8)
    assert below_floor["pass"] is False and below_floor["mismatches"] == []
    wide = e2e.forced_compare([[(1, 1.0), (6, 1.0), (7, 1.0), (8, 1.0)]], ref, 0.5, 0.7)
    assert wide["mismatches"] == [{"prompt": 0, "position": 0, "got": 1, "expected": 5,
                                   "reference_margin": 3.0}]
    assert wide["pass"] is False  # 75 % agreement, but a disagreement where the margin was 3
    short = e2e.forced_compare([[(5, 1.0)]], ref, 0.5, 0.0)
    assert short["pass"] is False and short["mismatches"][0]["positions"] == 1


def test_markdown_states_the_moe_fp8_criterion_and_the_op_listing(e2e: ModuleType) -> None:
    forced = {"agreement": 0.84, "positions": 256, "floor": 0.74, "mismatches": [], "pass": True}
    results = {
        "date": "2026-12-01", "gpu": "GPU", "torch": "2.11", "sglang": "0.5.17",
        "transformers": "5.17.0", "triton": "3.6.0", "compared": "x",
        "correctness_runs": ["none-qwen3-fp8-bf16"],
        "none-qwen3-fp8-bf16": {"command": "launch", "tie": 10.0, "forced": forced,
                                "compare": e2e.compare([r["tokens"] for r in REF], REF)},
        "qwen3-fp8-tolerance-bfloat16": {"dtype": "bfloat16", "rule": "RULE TEXT"},
        "ops": {"read_from": "sglang 0.5.17", "installed": "0.5.17", "qwen3-fp8": "holds",
                "rows": ["| qwen3-fp8 | step | `op` | sglang Triton | sglang/x.py |"]},
        "speed-qwen3-fp8-none-triton": {"batches": {"1": {
            "tok_per_s": [300.0], "median_tok_per_s": 300.0, "step_ms_p50": 1.0,
            "step_ms_p99": 1.0, "steps_without_graph": 0}}},
        "speed-qwen3-fp8-none-torch": {"batches": {"1": {
            "tok_per_s": [200.0], "median_tok_per_s": 200.0, "step_ms_p50": 1.0,
            "step_ms_p99": 1.0, "steps_without_graph": 0}}},
    }
    text = e2e.markdown(results)
    assert ("3/3 identical, 0 near-tie (tolerance: margin < 10; met); teacher-forced top-1"
            " agreement 84.0% of 256 (floor 74.0%), 0 beyond tolerance: met") in text
    assert "- qwen3-fp8 (reference in bfloat16): RULE TEXT" in text
    assert "listing checked against its source: qwen3-fp8: holds" in text
    assert "| qwen3-fp8 | step | `op` | sglang Triton | sglang/x.py |" in text
    assert "| qwen3-fp8: Triton tier / eager tier | 1.50x | >= 1.3x |" in text
    assert "stock AOT" not in text  # no stock run of that model: no empty ratio row
    assert e2e.passed(results) is True
    results["none-qwen3-fp8-bf16"]["forced"] = dict(forced, agreement=0.5, **{"pass": False})
    assert e2e.passed(results) is False  # the teacher-forced criterion counts, not only tokens


def _documented_command() -> list[str]:
    """The one-call GPU command in benchmarks/README.md, after ``.carry $OUT``."""
    import shlex

    readme = (EXAMPLES.parent / "benchmarks" / "README.md").read_text(encoding="utf-8")
    start = readme.index("benchmarks/gpu_e2e.sh .carry $OUT --models qwen3moe")
    line = readme[start:readme.index("\n\n", start)].split("```")[0]
    words = shlex.split(line.replace("\\\n", " "), comments=True)
    return words[3:]


def test_the_documented_moe_fp8_command_parses_into_the_runs_it_promises(
        e2e: ModuleType) -> None:
    args = e2e.parse_args(_documented_command())
    runs = e2e.plan(args)
    assert [(r["key"], r["dtype"]) for r in runs["correctness"]] == [
        ("none-qwen3moe-fp32", "float32"), ("none-qwen3-fp8-bf16", "bfloat16")]
    assert [r["key"] for r in runs["speed"]] == [
        "speed-qwen3moe-none-triton", "speed-qwen3moe-none-torch",
        "speed-qwen3-fp8-none-triton", "speed-qwen3-fp8-none-torch"]
    assert args.cuda_graphs is True
    # the optional second call
    extra = e2e.plan(e2e.parse_args(["--models", "llama-fp8", "--modes", "none"]))
    assert [r["key"] for r in extra["correctness"]] == ["none-llama-fp8-bf16"]
    assert extra["speed"] == []


def test_plan_keeps_the_dense_runs_and_rejects_unknown_models(e2e: ModuleType,
                                                              capsys: Any) -> None:
    runs = e2e.plan(e2e.parse_args(["--modes", "none,real", "--speed", "none:triton"]))
    assert [r["key"] for r in runs["correctness"]] == [
        "none-qwen3-fp32", "none-qwen3-bf16", "real-qwen3-bf16",
        "none-llama-fp32", "none-llama-bf16", "real-llama-bf16"]
    assert [r["key"] for r in runs["speed"]] == ["speed-none-triton"]
    with pytest.raises(SystemExit):
        e2e.parse_args(["--models", "qwen3,mixtral"])
    assert "unknown model(s) ['mixtral']" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        e2e.parse_args(["--speed", "none"])


@pytest.mark.wheels
def test_op_listing_holds_for_sglang_0_5_17_and_not_for_0_5_1(
        models: ModuleType, sglang_release: Any) -> None:
    root = unpack_py312("0.5.17") / "sglang"
    for name in models.OPS_0_5_17:
        assert models.check_listing(name, root) == [], name
    old = sglang_release("0.5.1") / "sglang"  # no kernel registry, no sglang.kernels
    assert "topk_softmax: kernels/ops/moe/__init__.py missing" in \
        models.check_listing("qwen3moe", old)


def test_the_moe_speed_shape_is_read_field_by_field_and_checked(e2e: ModuleType,
                                                                 capsys: Any) -> None:
    """``--speed-moe`` names Qwen3-MoE config fields in a fixed order: a shape with a field
    missing is refused, not zipped short."""
    args = e2e.parse_args(["--speed-moe", "2048,6,768,128,8,32,4,128", "--speed",
                           "none:triton", "--speed-models", "qwen3moe"])
    fields = e2e.shape_fields(e2e.MOE_SHAPE, args.speed_moe)
    assert fields["num_experts"] == 128 and fields["num_experts_per_tok"] == 8
    assert fields["moe_intermediate_size"] == 768 and fields["num_hidden_layers"] == 6
    for bad in ("2048,6,768,128,8,32,4", "2048,6,768,128,8,32,4,128,1", "2048,6,x,1,1,1,1,1"):
        with pytest.raises(SystemExit):
            e2e.parse_args(["--speed-moe", bad])
        assert "is not 8 comma-separated integers" in capsys.readouterr().err


def test_the_fp8_speed_shape_builds_each_fp8_speed_model_at_that_shape(
        e2e: ModuleType, tmp_path: Path, capsys: Any) -> None:
    """``--speed-fp8`` gives the FP8 models of ``--speed-models`` a speed-run twin at its
    shape (Qwen3-8B's widths on the GPU; a small one here), quantised as the correctness
    model is; the dense models are left alone."""
    need("transformers")
    need("safetensors")
    import json

    args = e2e.parse_args(["--speed-fp8", "256,1,512,2,1,128", "--speed", "none:triton",
                           "--speed-models", "qwen3-fp8,qwen3"])
    assert args.speed_fp8 == "256,1,512,2,1,128"
    with pytest.raises(SystemExit):
        e2e.parse_args(["--speed-fp8", "256,1,512,2,1"])
    assert "is not 6 comma-separated integers" in capsys.readouterr().err
    assets = e2e.build_assets(tmp_path, fp8_shape=args.speed_fp8, fp8_speed=("qwen3-fp8",))
    assert "qwen3-fp8-speed" in assets["models"] and "qwen3-speed" not in assets["models"]
    config = json.loads((assets["models"]["qwen3-fp8-speed"] / "config.json").read_text())
    assert {k: config[k] for k in e2e.DENSE_SHAPE} == e2e.shape_fields(e2e.DENSE_SHAPE,
                                                                       args.speed_fp8)
    assert config["quantization_config"]["weight_block_size"] == [128, 128]


@pytest.mark.wheels
def test_builders_write_checkpoints_sglang_0_5_17_reads(pypi_release: Any) -> None:
    """The models built with transformers 5 (0.5.17's pin): sglang's ModelConfig takes each
    config (architecture, quantization), Fp8Config reads the quantization_config, the MoE
    experts match sglang's expert loader mapping, transformers loads every checkpoint back,
    and the FP8 weights dequantise exactly to what the reference runs."""
    need("safetensors")
    result = run_python(program("scripts/e2e_models_checkpoints"),
                        paths=no_kernel_paths(pypi_release), args=(str(EXAMPLES),), timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    data = result.json()
    assert data["transformers"] == "5.12.1"  # experts fused in memory: the split is tested
    assert data["qwen3moe"] == {"arch": ["Qwen3MoeForCausalLM"], "quantization": None,
                                "experts": 2 * 8 * 3, "unmapped": [], "round_trip": True}
    projections = ["down_proj", "gate_proj", "k_proj", "o_proj", "q_proj", "up_proj", "v_proj"]
    assert data["qwen3-fp8"] == {
        "arch": ["Qwen3ForCausalLM"], "quantization": "fp8", "block": [128, 128],
        "serialized": True, "quantised": projections,
        # [N/128, K/128]: q/k/v/o 128x128, gate/up 256x128, down 128x256
        "scale_shapes": [[1, 1], [1, 2], [2, 1]], "dequantised_equal": True}
    assert data["llama-fp8"] == {
        "arch": ["LlamaForCausalLM"], "quantization": "fp8", "block": None,
        "serialized": True, "quantised": projections, "scale_shapes": [[1]],
        "dequantised_equal": True}


def test_score_asks_for_the_reference_positions_and_reads_sglangs_rows(
        e2e: ModuleType) -> None:
    """The teacher-forced request against a stub speaking sglang's format (read from
    0.5.17's tokenizer manager and logprob processor: one row per input token from
    ``logprob_start_len``, the first ``None``, each row [logprob, token id, text])."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    seen: list[dict[str, Any]] = []
    reply: list[Any] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            seen.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            body = json.dumps(reply[0]).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        server = object.__new__(e2e.Server)
        server.url = f"http://127.0.0.1:{httpd.server_address[1]}"
        ref = [{"tokens": [5, 6], "margins": [1.0, 1.0]}]
        reply.append([{"meta_info": {"input_top_logprobs": [
            None, [[-0.1, 5, None], [-0.5, 9, None]], [[-0.2, 6, "x"], [-1.2, 3, "y"]]]}}])
        scored = server.score([[1, 2, 3]], ref)
        assert [t for t, _ in scored[0]] == [5, 6]
        assert [round(m, 6) for _, m in scored[0]] == [0.4, 1.0]
        assert seen[0]["input_ids"] == [[1, 2, 3, 5, 6]]
        assert seen[0]["logprob_start_len"] == [2] and seen[0]["top_logprobs_num"] == 2
        reply[0] = [{"meta_info": {"input_top_logprobs": [[[-0.1, 5, None], [-0.5, 9, None]],
                                                          [[-0.2, 6, None], [-1.2, 3, None]]]}}]
        with pytest.raises(RuntimeError, match="unexpected input_top_logprobs layout"):
            server.score([[1, 2, 3]], ref)  # one row short: never silently misaligned
    finally:
        httpd.shutdown()


def test_reference_rounds_fp8_activations_and_measures_its_own_noise(
        models: ModuleType, e2e: ModuleType, tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("safetensors")
    from tokenizers import Tokenizer, pre_tokenizers, trainers
    from tokenizers import models as tok_models
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(tok_models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.train_from_iterator(["the quick brown fox"] * 5, trainers.BpeTrainer(
        vocab_size=80, special_tokens=["<unk>", "<s>", "</s>"]))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>",
                                   unk_token="<unk>")
    common = dict(vocab_size=len(fast), hidden_size=128, intermediate_size=128,
                  num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
                  head_dim=64, max_position_embeddings=256, tie_word_embeddings=False,
                  bos_token_id=1, eos_token_id=2, initializer_range=0.08)
    folders = models.build("qwen3-fp8", common, tmp_path, fast)
    prompts = [[3, 4, 5, 6], [7, 8, 9]]
    ref = e2e.reference(folders["reference"], prompts, 4, act_group=128, device="cpu")
    assert [len(r["tokens"]) for r in ref] == [4, 4]
    rounded = e2e.load_reference(folders["reference"], torch.float32, 128, "cpu")
    plain = e2e.load_reference(folders["reference"], torch.float32, None, "cpu")
    ids = torch.tensor([prompts[0]])
    with torch.no_grad():  # the hooks are live: rounding activations changes the logits
        assert not torch.equal(rounded(ids).logits, plain(ids).logits)
    forced = e2e.forced_logits(rounded, prompts, ref, "cpu")
    # teacher forcing reproduces the reference's own greedy tokens (same math, float32)
    assert [f.argmax(-1).tolist() for f in forced] == [r["tokens"] for r in ref]
    tol = e2e.tolerance(folders["reference"], prompts, ref, "bfloat16", 128, device="cpu")
    assert 0.0 <= tol["agreement"] <= 1.0 and tol["noise"] >= 0.0
    assert tol["floor"] == pytest.approx(tol["agreement"] - 0.10, abs=1e-4)
    assert tol["tie"] == pytest.approx(max(1e-3, 2 * tol["noise"]), abs=1e-5)


def _report(verdict: str, reason: str) -> dict[str, Any]:
    return {"processes": [["main", "pth", 8], ["detokenizer", "pth", 8],
                          ["scheduler", "pth", 15]],
            "verdicts": {"sgl-kernel-triton-fallback": verdict}, "fallback_reasons": [reason]}


def test_a_run_is_judged_by_the_kernel_mode_its_reports_show(e2e: ModuleType) -> None:
    """2026-12-01: the hybrid script's PYTHONPATH leaked into its "none" runs, which served
    on the real kernel; the report said so, and the harness now does too."""
    leaked = _report("not-applicable in 3/3 processes",
                     "the installed sgl_kernel imported and can serve here")
    fallback = _report("applied in 3/3 processes",
                       "standing in for sgl_kernel: sgl_kernel is not installed")
    partly = _report("applied in 1/3; pending in 2/3", "")
    assert e2e.mode_problem("none", fallback) is None
    assert e2e.mode_problem("broken", fallback) is None
    assert e2e.mode_problem("real", leaked) is None
    assert "can serve here" in e2e.mode_problem("none", leaked)
    assert "applied in 1/3" in e2e.mode_problem("none", partly)
    assert "fallback was applied in 3/3" in e2e.mode_problem("real", fallback)
    assert e2e.mode_problem("none", None) is None  # no reports: the run's error says why

    run = {"command": "launch", "compare": e2e.compare([r["tokens"] for r in REF], REF),
           "mode_problem": e2e.mode_problem("none", leaked)}
    results = {"date": "2026-12-01", "gpu": "GPU", "torch": "2.11", "sglang": "0.5.1",
               "transformers": "5.17.0", "triton": "3.6.0", "sgl-kernel": None,
               "correctness_runs": ["none-qwen3-fp32"], "none-qwen3-fp32": run}
    assert e2e.passed(results) is False
    assert "RUNS NOT IN THEIR KERNEL MODE" in e2e.markdown(results)
    run["mode_problem"] = None
    assert e2e.passed(results) is True
    assert "every run's reports match its mode" in e2e.markdown(results)


def test_hybrid_script_gives_the_real_kernel_to_its_probes_only(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The probes (stock import, providers, RoPE timing) run with the real kernel first on
    PYTHONPATH; the e2e runs get this process's environment, so that their mode "none"
    has no kernel and mode "real" gets it from --kernel-dir (2026-12-01: it leaked)."""
    hybrid = load_script("examples/hybrid_serve.py", "hybrid_serve")
    kernel = tmp_path / "kernel"
    kernel.mkdir()
    monkeypatch.setenv("PYTHONPATH", "/site")
    probes: list[dict[str, str]] = []
    serves: list[tuple[list[str], dict[str, str]]] = []

    def fake_run(code: str, env: dict[str, str], timeout: float = 300) -> Any:
        probes.append(env)
        return subprocess.CompletedProcess([], 0, stdout='{"state": "applied"}\n', stderr="")

    def fake_subprocess_run(cmd: list[str], env: dict[str, str], check: bool) -> Any:
        serves.append((cmd, env))
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setattr(hybrid, "run", fake_run)
    monkeypatch.setattr(hybrid.subprocess, "run", fake_subprocess_run)
    monkeypatch.setattr(sys, "argv", ["hybrid_serve.py", "--kernel-dir", str(kernel),
                                      "--out", str(tmp_path / "out")])
    hybrid.main()
    assert len(probes) == 3
    assert all(env["PYTHONPATH"].split(os.pathsep)[0] == str(kernel) for env in probes)
    [(cmd, env)] = serves
    assert env["PYTHONPATH"] == "/site"
    assert cmd[cmd.index("--kernel-dir") + 1] == str(kernel)


def _speed_run(medians: list[float], steps: list[float], ttft: float) -> dict[str, Any]:
    return {"mode": "none", "model": "qwen3", "ttft_s": [ttft], "ttft_median_s": ttft,
            "compiled_during_timing": 1,
            "batches": {"1": {"tok_per_s": medians, "median_tok_per_s": medians[0],
                              "steps_without_graph": 0, "step_ms": steps}}}


def test_servers_alternate_between_stacks(e2e: ModuleType) -> None:
    a, b = {"key": "speed-none-triton"}, {"key": "speed-real-aot"}
    assert e2e.speed_order([a, b], 2) == [(1, a), (1, b), (2, a), (2, b)]
    assert e2e.speed_order([a, b], 1) == [(1, a), (1, b)]


def test_several_servers_combine_into_one_row_with_their_spread(e2e: ModuleType) -> None:
    row = e2e.combine([_speed_run([100.0], [1.0, 1.0, 5.0], 0.2),
                       _speed_run([90.0], [1.0, 2.0, 1.0], 0.4),
                       _speed_run([95.0], [1.0, 1.0, 1.0], 0.3)])
    got = row["batches"]["1"]
    assert got["server_medians"] == [100.0, 90.0, 95.0]
    assert got["median_tok_per_s"] == 95.0
    assert got["spread"] == round(10 / 95, 4)
    assert (got["steps"], got["step_ms_p50"], got["step_ms_p99"]) == (9, 1.0, 5.0)
    assert (row["ttft_median_s"], row["compiled_during_timing"]) == (0.3, 3)


@pytest.mark.parametrize(("ratio", "spread", "verdict"), [
    (1.05, 0.10, "within spread"), (0.93, 0.10, "within spread"),
    (1.15, 0.10, "met"), (0.85, 0.10, "NOT met"), (0.99, None, "NOT met"),
    (1.0, None, "met"),
])
def test_a_ratio_is_judged_only_beyond_the_spread(e2e: ModuleType, ratio: float,
                                                  spread: float | None, verdict: str) -> None:
    assert e2e.judged(ratio, spread, 1.0) == verdict


def test_the_ratio_table_marks_every_goal(e2e: ModuleType) -> None:
    results = {"speed-none-triton": e2e.combine([_speed_run([100.0], [1.0, 1.0], 0.2)] * 2),
               "speed-real-aot": e2e.combine([_speed_run([80.0], [1.0, 2.0], 0.3),
                                              _speed_run([82.0], [1.0, 1.0], 0.3)])}
    text = "\n".join(e2e.ratios(results, [1]))
    assert "| Triton tier / stock AOT | 1.23x (spread 2%: met) | >= 1.0x |" in text
    assert "TTFT, stock / Triton tier | 1.50x (met)" in text
    assert "speed-real-aot: step p99 / p50 | 2.00 (NOT met) | <= 1.5 |" in text


def test_slow_steps_name_their_place_in_the_repetition(e2e: ModuleType) -> None:
    """A completion step comes back at the same index of every repetition; a burst does not."""
    rep = [0.002] * 10
    steps = [*rep[:8], 0.009, 0.002, *rep[:3], 0.005, 0.005, *rep[:3], 0.009, 0.002]
    assert e2e.slow_steps(steps, 10) == [[8, 0, 9.0], [3, 1, 5.0], [4, 1, 5.0], [8, 1, 9.0]]
    assert e2e.slow_steps([0.002] * 6, 3) == [] and e2e.slow_steps([], 3) == []


def test_steady_step_is_the_best_stretch_within_one_repetition(e2e: ModuleType) -> None:
    """A slow stretch on one server does not move it; windows never span two repetitions."""
    slow_then_fast = [2.0] * 20 + [1.0] * 16 + [2.0] * 4
    assert e2e.steady_step(slow_then_fast, 40) == 1.0
    # 8 fast steps ending repetition 0 and 8 starting repetition 1: no window of 16 holds
    # them all, so the best window still has slow steps in it
    split = [2.0] * 12 + [1.0] * 8 + [1.0] * 8 + [2.0] * 12
    assert e2e.steady_step(split, 20) == 1.5
    assert e2e.steady_step([1.0] * 10, 10) is None and e2e.steady_step([1.0] * 20, 0) is None


def test_the_steady_row_compares_the_stacks_best_stretches(e2e: ModuleType) -> None:
    fast, slow = [1.0] * 16 + [3.0] * 16, [1.1] * 32
    results = {"speed-none-triton": e2e.combine([_speed_run([90.0], fast, 0.2)] * 2),
               "speed-real-aot": e2e.combine([_speed_run([95.0], slow, 0.2),
                                              _speed_run([95.0], [1.0] * 32, 0.2)])}
    got = results["speed-real-aot"]["batches"]["1"]
    assert got["server_steady_ms"] == [1.1, 1.0]
    assert (got["steady_step_ms"], got["steady_spread"]) == (1.05, round(0.1 / 1.05, 4))
    text = "\n".join(e2e.ratios(results, [1]))
    assert "steady step (16-step best stretch), stock / Triton tier | 1.05x (spread 10%:" \
           " within spread) | >= 1.0x |" in text


def test_render_recombines_a_saved_run(e2e: ModuleType, tmp_path: Path) -> None:
    one, two = _speed_run([100.0], [1.0] * 32, 0.2), _speed_run([50.0], [2.0] * 32, 0.2)
    for run in (one, two):
        run["batches"]["1"].update(step_ms_p50=1.0, step_ms_p99=2.0)
    saved = {"date": "d", "gpu": "g", "python": "3", "torch": "t", "sglang": "s",
             "transformers": "x", "triton": "y", "speed-none-triton#1": one,
             "speed-none-triton#2": two,
             "speed-none-triton": {"servers": 2, "batches": {}}}
    (tmp_path / "e2e.json").write_text(json.dumps(saved))
    assert e2e.main(["--render", str(tmp_path / "e2e.json")]) == 0
    again = json.loads((tmp_path / "e2e.json").read_text())
    assert again["speed-none-triton"]["batches"]["1"]["server_steady_ms"] == [1.0, 2.0]
    assert "| speed-none-triton | 75.0 [50-100]" in (tmp_path / "e2e.md").read_text()


def test_pinning_wraps_the_server_command_only_when_asked(e2e: ModuleType) -> None:
    cmd = ["python", "-m", "sglang.launch_server"]
    assert e2e.pinned(cmd, "") == cmd
    assert e2e.pinned(cmd, "0-7") == ["taskset", "-c", "0-7", *cmd]
    assert e2e.parse_args(["--pin-cpus", "2,3"]).pin_cpus == "2,3"
