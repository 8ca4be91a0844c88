"""Doctor rule sgl-kernel-green-ctx-driver: the threshold is per symbol.

cuGreenCtxStreamCreate arrived with the CUDA 12.5 driver API (sglang PR 8090), one
release after cuGreenCtxCreate/Destroy: sgl-kernel 0.2.6-0.3.5 cannot load on a 12.4
driver although that driver has the other two, so one threshold for all three would
pass it.
"""

from __future__ import annotations

from ...support.doctor import facts, verdict

RULE = "sgl-kernel-green-ctx-driver"


def test_cuda_12_4_driver_fails_naming_stream_create() -> None:
    found = verdict(RULE, facts({"sgl-kernel": "0.2.7"}, driver_cuda=12040))
    assert found is not None and found.level == "fail"
    assert "this driver (CUDA 12.4) lacks cuGreenCtxStreamCreate" in found.detail
    assert "'undefined symbol: cuGreenCtxStreamCreate'" in found.detail
    assert found.remedy.startswith("upgrade the NVIDIA driver to >= 555 (CUDA 12.5)")


def test_branch_550_fails_and_555_passes() -> None:
    found = verdict(RULE, facts({"sgl-kernel": "0.3.5"}, driver_version="550.54.15"))
    assert found is not None and "lacks cuGreenCtxStreamCreate" in found.detail
    assert verdict(RULE, facts({"sgl-kernel": "0.3.5"}, driver_version="555.42.02")) is None


def test_older_driver_quotes_the_first_error_users_report() -> None:
    """Issue 8432's error on a CUDA 12.2 driver: cuGreenCtxDestroy."""
    found = verdict(RULE, facts({"sgl-kernel": "0.2.7"}, driver_cuda=12020))
    assert found is not None
    assert "lacks cuGreenCtxCreate, cuGreenCtxDestroy, cuGreenCtxStreamCreate" in found.detail
    assert "'undefined symbol: cuGreenCtxDestroy'" in found.detail
