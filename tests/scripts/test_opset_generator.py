"""The MoE/FP8 op-set data (``kernels/surface``) is what its scanner,
``tools/regen_moe_fp8_opset.py``, reads from the sglang wheels today."""

from __future__ import annotations

import pytest

from sglang_shims.kernels.surface import opset
from sglang_shims.testing import wheels

from ..support.scripts import load_script


@pytest.mark.wheels
@pytest.mark.parametrize("release", ["0.5.1", "0.5.17"])
def test_opset_data_matches_the_wheels(release: str) -> None:
    """The committed op-set data holds what the scanner (tools/regen_moe_fp8_opset.py) reads
    from the wheel today (two releases, ~3 s each: the full rebuild takes a minute and a
    half)."""
    scanner = load_script("tools/regen_moe_fp8_opset.py", "regen_moe_fp8_opset")
    data = opset.load()
    committed = {op: span["entry"] for op, spans in data["ops"].items() for span in spans
                 if release in data["releases"][data["releases"].index(span["first"]):
                                                data["releases"].index(span["last"]) + 1]}
    assert scanner.scan(wheels.unpack("sglang", release) / "sglang") == committed
    # what docs/fallback-ops.md says, read by hand from the two wheels
    align = committed["moe_align_block_size"]["modules"]
    if release == "0.5.1":
        assert committed["moe_align_block_size"]["calls"] == ["8"]
        assert "moe_sum_reduce" not in committed  # its own Triton kernel then
    else:
        assert "kernels.ops.moe.__init__ (kernel registry)" in align
        assert committed["moe_sum_reduce"]["calls"] == ["3"]
