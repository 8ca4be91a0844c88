"""The pure parts of examples/e2e_serve.py (the GPU run itself is a device job)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "e2e_serve.py"


@pytest.fixture(scope="module")
def e2e() -> ModuleType:
    spec = importlib.util.spec_from_file_location("e2e_serve", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["e2e_serve"] = module
    spec.loader.exec_module(module)
    return module


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
