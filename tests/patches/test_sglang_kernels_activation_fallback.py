"""sglang-kernels-activation-fallback: with RoPE served, sglang 0.5.17's MLP is next.

The run of ``tests/wheels/test_model_forward.py`` on sglang 0.5.17 (real wheel, no sgl_kernel),
which passes with this patch applied (asserted there), with only this patch disabled: the
forward pass gets past RoPE and must stop at sglang's JIT activation op.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ..support.model_forward import check_stops_at

pytestmark = pytest.mark.wheels


def test_without_the_patch_the_first_mlp_fails(sglang0517: tuple[Path, ...]) -> None:
    check_stops_at(sglang0517, "sglang-kernels-activation-fallback",
                   "sglang::_run_activation_inplace", past="sglang::apply_rope_inplace")
