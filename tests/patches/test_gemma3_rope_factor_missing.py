"""gemma3-rope-factor-missing: sglang 0.5.13's Gemma 3 on the transformers it pins (5.8.1).

sglang's ``Gemma3TextModel`` is built on CPU (its attention layers' ``get_rope`` is
recorded instead of built: only the model's own two rotary tables matter here) for a
Gemma 3 1B-style config (unscaled RoPE: base 1e6 global, 1e4 local) and a 4B-style one
(linear x8 global).  Stock 0.5.13 fails on the first with KeyError 'factor'; patched,
its tables equal those of sglang 0.5.14 -- the release that fixed it -- on the same
transformers, and float64 arithmetic; the 4B-style model is built exactly as stock.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ..conftest import need, run_python

pytestmark = pytest.mark.wheels

PATCH = "gemma3-rope-factor-missing"
POSITIONS = [0, 1, 7, 100, 1000, 4000]

CODE = f"""
import copy, importlib, json, sys, tempfile, torch
import transformers
from transformers import Gemma3TextConfig
scaled = sys.argv[1] == "scaled"
config = Gemma3TextConfig(
    vocab_size=128, hidden_size=256, intermediate_size=256, num_hidden_layers=2,
    num_attention_heads=4, num_key_value_heads=2, head_dim=64, max_position_embeddings=8192,
    sliding_window=16, rope_theta=1e6, rope_local_base_freq=1e4,
    rope_scaling={{"rope_type": "linear", "factor": 8.0}} if scaled else None,
    architectures=["Gemma3ForCausalLM"])
folder = tempfile.mkdtemp()
config.save_pretrained(folder)  # ServerArgs reads the model's config.json
before = copy.deepcopy(config.rope_parameters)
from sglang.srt import server_args as sa
sa.set_global_server_args_for_scheduler(sa.ServerArgs(model_path=folder, device="cpu"))
from sglang.srt.distributed import parallel_state as ps
ps.init_distributed_environment(world_size=1, rank=0, local_rank=0, backend="gloo",
                                distributed_init_method="file://" + tempfile.mkdtemp() + "/s")
ps.initialize_model_parallel(tensor_model_parallel_size=1)
gemma3 = importlib.import_module("sglang.srt.models.gemma3_causal")
gemma3.get_rope = lambda *a, **k: torch.nn.Identity()  # the layers' own tables: not needed
result = {{"transformers": transformers.__version__}}
try:
    model = gemma3.Gemma3TextModel(config=config, quant_config=None)
    positions = torch.tensor([{POSITIONS!r}])
    x = torch.zeros(1, len({POSITIONS!r}), 256)
    for name in ("rotary_emb", "rotary_emb_local"):
        rope = getattr(model, name)
        cos, sin = rope(x, positions)
        result[name] = {{"inv_freq": rope.inv_freq.tolist(), "cos": cos[0].tolist(),
                        "sin": sin[0].tolist()}}
except Exception as exc:
    result["error"] = f"{{type(exc).__name__}}: {{exc}}"
result["config_unchanged"] = config.rope_parameters == before
import sglang_shims
result["state"] = sglang_shims.status().get("{PATCH}", {{}}).get("state")
print(json.dumps(result))
"""


@pytest.fixture(scope="module")
def stack(pypi_release: Callable[[str, str], Path],
          standin_kernel: Callable[..., Path]) -> Callable[[str], tuple[Path, ...]]:
    for module in ("torch", "fastapi", "zmq"):
        need(module)
    from sglang_shims.testing.standin import ops_faked_by

    tf = (pypi_release("transformers", "5.8.1"), pypi_release("huggingface_hub", "1.5.0"),
          pypi_release("tokenizers", "0.22.2"))

    def paths(version: str) -> tuple[Path, ...]:
        root = pypi_release("sglang", version)
        return (*tf, root, standin_kernel("0.3.21", torch_ops=ops_faked_by(root)))

    return paths


def run(paths: tuple[Path, ...], kind: str, **env: str) -> dict[str, Any]:
    result = run_python(CODE, paths=paths, env=env, args=(kind,), timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    data = result.json()
    assert isinstance(data, dict)
    assert data["transformers"] == "5.8.1"
    return data


def test_unscaled_gemma3_builds_as_in_the_fixed_release(
        stack: Callable[[str], tuple[Path, ...]]) -> None:
    stock = run(stack("0.5.13"), "unscaled", SGLANG_SHIMS_DISABLE=PATCH)
    assert stock["state"] == "disabled" and stock["error"] == "KeyError: 'factor'"

    patched = run(stack("0.5.13"), "unscaled")
    assert patched["state"] == "applied" and "error" not in patched, patched.get("error")
    assert patched["config_unchanged"] is True
    fixed = run(stack("0.5.14"), "unscaled")  # upstream's fix, same transformers
    assert "error" not in fixed and fixed["state"] == "not-applicable"
    for name, base in (("rotary_emb", 1e6), ("rotary_emb_local", 1e4)):
        ours, theirs = patched[name], fixed[name]
        assert max(abs(a - b) for a, b in zip(ours["inv_freq"], theirs["inv_freq"],
                                              strict=True)) <= 1e-12
        for key in ("cos", "sin"):
            worst = max(abs(a - b) for ra, rb in zip(ours[key], theirs[key], strict=True)
                        for a, b in zip(ra, rb, strict=True))
            assert worst <= 1e-6, (name, key, worst)
        expected = [1.0 / (base ** (i / 64)) for i in range(0, 64, 2)]
        assert all(math.isclose(a, b, rel_tol=1e-6)
                   for a, b in zip(ours["inv_freq"], expected, strict=True))


def test_scaled_gemma3_is_built_as_stock(stack: Callable[[str], tuple[Path, ...]]) -> None:
    stock = run(stack("0.5.13"), "scaled", SGLANG_SHIMS_DISABLE=PATCH)
    patched = run(stack("0.5.13"), "scaled")
    assert "error" not in stock and "error" not in patched
    assert patched["rotary_emb"] == stock["rotary_emb"]
    assert patched["rotary_emb_local"] == stock["rotary_emb_local"]
    assert patched["rotary_emb"]["inv_freq"][1] == pytest.approx(1e6 ** (-2 / 64) / 8)
