"""sm120-trtllm-backend-autoselect with the real ServerArgs of the affected releases.

The real ``sglang.srt.server_args`` of a release is imported (it needs sglang's runtime
dependencies: transformers, fastapi, ...; when one is missing the tests skip and name it,
a failure in CI; any other ImportError, ours included, fails), then
``torch.cuda`` is told it has a GPU of a given capability and the real
``ServerArgs._handle_attention_backend_compatibility`` is called on a ServerArgs built
from the dataclass defaults, with a stand-in model config (an MHA Llama, or an MLA
model).  That is the function that picks the attention backend when none is given.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from ..support.patch_runs import run_json
from ..support.programs import program
from ..support.run import need

pytestmark = pytest.mark.wheels

PATCH = "sm120-trtllm-backend-autoselect"

HARNESS = program("patches/sm120_trtllm_backend_autoselect")

MHA_12 = {"capability": "12.0"}
EXPLICIT_12 = {"capability": "12.0", "backend": "trtllm_mha"}
MLA_12 = {"capability": "12.0", "mla": True}
MHA_10 = {"capability": "10.0"}
CASES = (MHA_12, EXPLICIT_12, MLA_12, MHA_10)


def run(release: Path, gpus: str, cases: tuple[dict[str, object], ...] = CASES, *,
        stock: bool = False) -> tuple[list[dict[str, object]], dict[str, object]]:
    # gpus: what the patch's GPU gate sees (SGLANG_SHIMS_GPU_CAPABILITY)
    need("torch")
    env = {"SGLANG_SHIMS_GPU_CAPABILITY": gpus, "PATCH_ID": PATCH, "CASES": json.dumps(cases)}
    if stock:
        env["STOCK"] = "1"
    data = run_json(HARNESS, (release,), env, activate=not stock, timeout=300)
    if "import_error" in data:
        pytest.skip(f"sglang's runtime dependencies are missing here: {data['import_error']}")
    status = data.get("status", {})
    assert isinstance(status, dict)
    return data["cases"], status


@pytest.fixture(scope="module")
def release(sglang_release: Callable[[str], Path]) -> Callable[[str], Path]:
    return sglang_release


@pytest.mark.parametrize("version", ["0.5.6.post1", "0.5.6.post2"])
def test_sm120_no_longer_picks_trtllm(version: str, release: Callable[[str], Path]) -> None:
    folder = release(version)
    (stock, stock_explicit, stock_mla, stock_b200), _ = run(folder, "12.0", stock=True)
    (mha, explicit, mla, b200), status = run(folder, "12.0")

    # the bug: no backend given, MHA model, sm_120 -> trtllm_mha, which sglang then refuses
    assert "TRTLLM MHA backend is only supported on Blackwell GPUs (SM100)" in str(
        stock.get("error")), stock
    assert mha.get("backend") in ("flashinfer", "triton"), mha
    assert status["state"] == "applied", status
    assert status["changes"] == ["setattr sglang.srt.server_args.is_blackwell"]
    # sglang.srt.utils.is_blackwell, used elsewhere, still counts sm_12x as Blackwell
    assert mha["utils_is_blackwell"] is True

    # an explicit --attention-backend trtllm_mha is the user's; sglang still refuses it
    assert "only supported on Blackwell GPUs (SM100)" in str(explicit.get("error"))
    assert stock_explicit == explicit
    # MLA models were never affected
    assert stock_mla == mla == {"utils_is_blackwell": True, "backend": "triton"}
    # a machine with an sm_120 and a B200 (gate passes): the B200 keeps trtllm_mha
    assert stock_b200["backend"] == b200["backend"] == "trtllm_mha"


@pytest.mark.parametrize("version", ["0.5.6.post1", "0.5.6.post2"])
def test_datacenter_blackwell_is_not_applicable(version: str,
                                                release: Callable[[str], Path]) -> None:
    (b200,), status = run(release(version), "10.0", (MHA_10,))
    assert b200["backend"] == "trtllm_mha"
    assert status["state"] == "not-applicable"
    assert "does not match >=12.0,<13" in str(status["reason"])


@pytest.mark.parametrize("version", ["0.5.6", "0.5.7"])
def test_neighbours_need_nothing(version: str, release: Callable[[str], Path]) -> None:
    (mha,), status = run(release(version), "12.0", (MHA_12,))
    assert mha.get("backend") in ("flashinfer", "triton"), mha
    assert status["state"] == "not-applicable"
    assert f"sglang {version} not in" in str(status["reason"])
