"""tf5-gemma3-rope: sglang 0.5.1's own Gemma 3 built on a transformers 5.24 config.

A Gemma 3 4B-style text config (global RoPE: linear, factor 8, base 1e6; local RoPE:
default, base 1e4), given with the keyword arguments a checkpoint's config.json holds.
On transformers 5.24 sglang 0.5.1's ``Gemma3ForCausalLM`` fails to build without the
patch; with it, both RoPE tables (inverse frequencies and the cos/sin sglang's layers
use) equal, bit for bit, the ones the same sglang code builds on transformers 4.55.2
(sglang 0.5.1's pin, run in the same test), and match float64 arithmetic.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ..support.patch_runs import run_json
from ..support.programs import program
from ..support.transformers5 import TRANSFORMERS5, sglang_on_transformers5

pytestmark = pytest.mark.wheels

PATCH = "tf5-gemma3-rope"
POSITIONS = [0, 1, 7, 100, 1000, 4000, 8191]

CODE = program("patches/tf5_gemma3_rope")


def run(paths: tuple[Path, ...], transformers: str = TRANSFORMERS5, **env: str
        ) -> dict[str, Any]:
    return run_json(CODE, paths, env, args=(json.dumps(POSITIONS),), transformers=transformers)


@pytest.fixture(scope="module")
def paths(sglang_release: Callable[[str], Path], pypi_release: Callable[[str, str], Path],
          standin_kernel: Callable[..., Path]) -> tuple[Path, ...]:
    return sglang_on_transformers5(sglang_release, pypi_release, standin_kernel)


@pytest.fixture(scope="module")
def pinned(sglang_release: Callable[[str], Path],
           standin_kernel: Callable[..., Path]) -> dict[str, Any]:
    """The same code on sglang 0.5.1's own transformers (4.55.2), where it always worked."""
    data = run((sglang_release("0.5.1"), standin_kernel("0.3.18")), transformers="4.55.2")
    assert data["build"] == "ok"
    assert data["state"] == "not-applicable"
    return data


def test_gemma3_does_not_build_stock(paths: tuple[Path, ...]) -> None:
    data = run(paths, SGLANG_SHIMS_DISABLE=PATCH)
    assert data["state"] == "disabled"
    # the global table is built first: its RoPE type is looked up from the per-layer dict
    assert data["build"] == "KeyError: None"


def test_rope_tables_equal_transformers4_and_float64(paths: tuple[Path, ...],
                                                    pinned: dict[str, Any]) -> None:
    import math

    data = run(paths)
    assert data["state"] == "applied"
    assert data["build"] == "ok"
    for name in ("rotary_emb", "rotary_emb_local"):
        assert data[name] == pinned[name], name  # bit for bit, through JSON's exact floats
    for name, base, factor in (("rotary_emb", 1e6, 8.0), ("rotary_emb_local", 1e4, 1.0)):
        inv = data[name]["inv_freq"]
        expected = [1.0 / (base ** (i / 64)) / factor for i in range(0, 64, 2)]
        assert all(math.isclose(a, b, rel_tol=1e-6) for a, b in zip(inv, expected, strict=True))
        for row, p in zip(data[name]["cos"], POSITIONS, strict=True):
            want = [math.cos(p * f) for f in expected * 2]
            assert max(abs(a - b) for a, b in zip(row, want, strict=True)) < 2e-3, (name, p)
    # the global and local tables really differ (two bases, one scaled)
    assert data["rotary_emb"]["inv_freq"] != data["rotary_emb_local"]["inv_freq"]
    assert json.dumps(data["rotary_emb"]) != json.dumps(data["rotary_emb_local"])
