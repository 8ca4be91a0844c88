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


def test_markdown_lists_every_fp32_run_and_the_tier_ratio(e2e: ModuleType) -> None:
    results = {
        "date": "2026-11-30", "gpu": "GPU", "torch": "2.11", "sglang": "0.5.1",
        "transformers": "4.55.2", "triton": "3.6.0", "sgl-kernel": None,
        "qwen3-reference": REF,
        "qwen3-fp32": {"command": "launch",
                       "compare": e2e.compare([r["tokens"] for r in REF], REF)},
        "qwen3-fp32-torch": {"command": "launch", "error": "RuntimeError: boom"},
        "qwen3-bf16-triton": {"runs": [{"tok_per_s": 50.0}, {"tok_per_s": 2000.0}],
                              "cuda_graphs": True},
        "qwen3-bf16-torch": {"runs": [{"tok_per_s": 100.0}, {"tok_per_s": 1000.0}]},
    }
    text = e2e.markdown(results)
    assert "| qwen3-fp32 | launch | 3/3 identical, 0 near-tie" in text
    assert "| qwen3-fp32-torch | launch | no tokens, ERROR RuntimeError: boom" in text
    assert "qwen3-reference" not in text
    assert "| ratio Triton / eager | 0.50x | 2.00x |" in text
    assert "| decode throughput, bf16, CUDA graphs on |" in text


def test_server_flags_switch_cuda_graphs_and_backend(e2e: ModuleType) -> None:
    off = e2e.server_flags("triton", cuda_graphs=False)
    on = e2e.server_flags("torch_native", cuda_graphs=True)
    assert "--disable-cuda-graph" in off and "--cuda-graph-max-bs" not in off
    assert "--disable-cuda-graph" not in on
    assert on[on.index("--cuda-graph-max-bs") + 1] == "32"
    assert on[on.index("--attention-backend") + 1] == "torch_native"
    assert e2e.FLAGS[e2e.FLAGS.index("--attention-backend") + 1] == "triton"  # not mutated
