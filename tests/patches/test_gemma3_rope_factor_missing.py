"""gemma3-rope-factor-missing: sglang 0.5.13's Gemma 3 on the transformers it pins (5.8.1).

sglang's ``Gemma3TextModel`` is built on CPU (its attention layers' ``get_rope`` is
recorded instead of built: only the model's own two rotary tables matter here) for a
Gemma 3 1B-style config (unscaled RoPE: base 1e6 global, 1e4 local) and a 4B-style one
(linear x8 global).  Stock 0.5.13 fails on the first with KeyError 'factor'; patched,
its tables equal those of sglang 0.5.14 -- the release that fixed it -- on the same
transformers, and float64 arithmetic; the 4B-style model is built exactly as stock.
Both configs are built in each process (sglang's import dominates the cost).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ..support.patch_runs import run_json
from ..support.programs import program
from ..support.run import need

pytestmark = pytest.mark.wheels

PATCH = "gemma3-rope-factor-missing"

CODE = program("patches/gemma3_rope_factor_missing")


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


def run(paths: tuple[Path, ...], **env: str) -> dict[str, Any]:
    return run_json(CODE, paths, env, transformers="5.8.1")


def test_unscaled_gemma3_builds_as_in_the_fixed_release_scaled_as_stock(
        stack: Callable[[str], tuple[Path, ...]]) -> None:
    stock = run(stack("0.5.13"), SGLANG_SHIMS_DISABLE=PATCH)
    assert stock["state"] == "disabled"
    assert stock["unscaled"]["error"] == "KeyError: 'factor'"

    patched = run(stack("0.5.13"))
    assert patched["state"] == "applied"
    ours = patched["unscaled"]
    assert "error" not in ours, ours.get("error")
    assert ours["config_unchanged"] is True
    fixed = run(stack("0.5.14"))["unscaled"]  # upstream's fix, same transformers
    assert "error" not in fixed
    for name, base in (("rotary_emb", 1e6), ("rotary_emb_local", 1e4)):
        assert max(abs(a - b) for a, b in zip(ours[name]["inv_freq"], fixed[name]["inv_freq"],
                                              strict=True)) <= 1e-12
        for key in ("cos", "sin"):
            worst = max(abs(a - b)
                        for ra, rb in zip(ours[name][key], fixed[name][key], strict=True)
                        for a, b in zip(ra, rb, strict=True))
            assert worst <= 1e-6, (name, key, worst)
        expected = [1.0 / (base ** (i / 64)) for i in range(0, 64, 2)]
        assert all(math.isclose(a, b, rel_tol=1e-6)
                   for a, b in zip(ours[name]["inv_freq"], expected, strict=True))

    # a scaled (4B-style) config has its factor: built exactly as stock builds it
    assert "error" not in stock["scaled"] and "error" not in patched["scaled"]
    for name in ("rotary_emb", "rotary_emb_local"):
        assert patched["scaled"][name] == stock["scaled"][name]
    assert patched["scaled"]["rotary_emb"]["inv_freq"][1] == pytest.approx(
        1e6 ** (-2 / 64) / 8)
