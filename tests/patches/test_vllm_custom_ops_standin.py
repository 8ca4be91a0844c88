"""vllm-custom-ops-standin: sglang up to 0.4.2.post3 call vllm's compiled norm, activation
and RoPE ops, whose ``_C`` library (vllm 0.6.4.post1's) cannot load on today's torch.

Ops: vllm 0.6.4.post1's real ``_custom_ops.py`` and the modules it imports (a few files of
the ~200 MB wheel, read by range requests; ``_C`` is not among them, so it is missing as
where it cannot load), with the versions sglang 0.4.2 resolves declared: stock, every op
fails on the missing ``torch.ops._C`` op; patched, each writes the numbers of a float64
reference (``tests/programs/patches/vllm_custom_ops_standin/reference.py``) into the
caller's tensors, at a few shapes, fp32 and bf16, neox and GPT-J RoPE, full and partial
rotary.  Where ``torch.ops._C`` has the ops (a ``_C`` that loads), vllm's own functions stay.

Model: sglang 0.4.1.post7 in its own environment (the matrix's overlay: vllm 0.6.4.post1
with its real ``_C.abi3.so``, flashinfer left out), the matrix's model check -- Qwen3 and
Llama through sglang's model classes, greedy tokens against transformers' -- passes with
the shims and fails on the missing op with this patch disabled.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sglang_shims.testing import wheel_members, wheels

from ..support.packages import write_package
from ..support.patch_runs import run_applied, run_json, run_stock
from ..support.programs import patch_programs
from ..support.run import need
from ..support.stacks import model_check, overlay_paths

pytestmark = pytest.mark.wheels

PATCH = "vllm-custom-ops-standin"
(OPS,) = patch_programs(PATCH, "ops")
VLLM = "0.6.4.post1"  # what sglang 0.4.0-0.4.2.post3 resolve (tools/matrix/locks)
FILES = ("vllm/_custom_ops.py", "vllm/envs.py", "vllm/logger.py", "vllm/scalar_type.py",
         "vllm/logging_utils/__init__.py", "vllm/logging_utils/formatter.py",
         "vllm/platforms/__init__.py", "vllm/platforms/interface.py")
NAMES = ("rms_norm", "fused_add_rms_norm", "silu_and_mul", "gelu_and_mul",
         "gelu_tanh_and_mul", "rotary_embedding")
TOLERANCE = {"fp32": 1e-5, "bf16": 2e-2}  # of the reference's largest value


def metadata(dist: str, version: str) -> dict[str, str]:
    return {f"{dist}-{version}.dist-info/METADATA":
            f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n"}


@pytest.fixture(scope="module")
def paths(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, ...]:
    need("torch")
    try:
        vllm = wheel_members.members("vllm", VLLM, FILES)
    except wheels.NotServed as exc:
        pytest.skip(f"the package index could not serve vllm=={VLLM}: {exc}")
    # vllm/__init__.py is not fetched: `vllm` is a namespace package, so importing
    # _custom_ops runs none of vllm's engine imports
    declared = write_package(tmp_path_factory.mktemp("dists"),
                             {**metadata("vllm", VLLM), **metadata("sglang", "0.4.2")})
    return (declared, vllm)


def check_numbers(data: dict[str, Any]) -> None:
    cases = data["cases"]
    assert len(cases) == 26
    for name, outcome in cases.items():
        assert "error" not in outcome, (name, outcome)
        assert outcome["in_place"] is True, name
        assert outcome["gap"] <= TOLERANCE[name.rsplit(" ", 1)[1]], (name, outcome)


def test_stock_every_op_is_missing(paths: tuple[Path, ...]) -> None:
    data = run_stock(OPS, paths, PATCH)
    for name, outcome in data["cases"].items():
        op = name.split(" ")[0]
        assert outcome == {"error": f"AttributeError: '_OpNamespace' '_C' object has no "
                                    f"attribute '{op}'"}, (name, outcome)


def test_patched_ops_match_the_reference_in_place(paths: tuple[Path, ...]) -> None:
    data = run_applied(OPS, paths, PATCH)
    assert set(data["modules"].values()) == {"sglang_shims.kernels.standin.vllm_ops"}
    check_numbers(data)


def test_with_vllm_ops_registered_the_patch_retires(paths: tuple[Path, ...]) -> None:
    data = run_json(OPS, paths, args=("with-ops",))
    assert data["state"] == "retired", data
    assert data["modules"] == {name: "vllm._custom_ops" for name in NAMES}


def test_outside_the_vllm_range_it_is_left_alone(paths: tuple[Path, ...],
                                                 tmp_path: Path) -> None:
    """vllm 0.7.0 dropped the activation functions; a vllm claiming it is not patched."""
    later = write_package(tmp_path, {**metadata("vllm", "0.7.0"), **metadata("sglang", "0.4.2")})
    data = run_json(OPS, (later, paths[1]))
    assert data["state"] == "not-applicable", data


@pytest.fixture(scope="module")
def release_paths() -> tuple[Path, ...]:
    site, root = overlay_paths("0.4.1.post7")
    assert (site / "vllm" / "_C.abi3.so").is_file(), "the release's vllm is missing"
    return (site, root)


def test_model_serves_on_the_standin_ops(release_paths: tuple[Path, ...]) -> None:
    data = model_check(release_paths)
    assert isinstance(data["acted"], list) and PATCH in data["acted"], data
    model = data["model"]
    assert isinstance(model, dict) and model["ok"] is True, model


def test_without_the_patch_the_model_fails_on_the_missing_op(
        release_paths: tuple[Path, ...]) -> None:
    data = model_check(release_paths, SGLANG_SHIMS_DISABLE=PATCH)
    model = data["model"]
    assert isinstance(model, dict) and model["ok"] is False
    assert "'_OpNamespace' '_C' object has no attribute" in json.dumps(model), model
