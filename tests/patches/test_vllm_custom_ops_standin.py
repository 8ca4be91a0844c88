"""vllm-custom-ops-standin: sglang up to 0.4.2.post3 call vllm's compiled norm, activation
and RoPE ops, whose ``_C`` library (vllm 0.6.4.post1's) cannot load on today's torch.

Ops: vllm 0.6.4.post1's real ``_custom_ops.py`` and the modules it imports (a few files of
the ~200 MB wheel, read by range requests; ``_C`` is not among them, so it is missing as
where it cannot load), with the versions sglang 0.4.2 resolves declared: stock, every op
fails on the missing ``torch.ops._C`` op; patched, each writes into the caller's tensors
the numbers of the kernel tests' float64 references (``tests/support/references.py``, with
their tolerances), at a few shapes, fp32 and bf16, neox and GPT-J RoPE, full and partial
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
import torch

from sglang_shims.testing import wheel_members, wheels

from ..support.packages import write_package
from ..support.patch_runs import run_applied, run_json, run_stock
from ..support.programs import patch_programs
from ..support.references import assert_close, ref_act, ref_rmsnorm, ref_rope
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


def run_ops(paths: tuple[Path, ...], tmp_path: Path, *, stock: bool = False
            ) -> tuple[dict[str, Any], dict[str, Any]]:
    """The program's JSON and the cases it saved."""
    saved = tmp_path / "cases.pt"
    runner = run_stock if stock else run_applied
    data = runner(OPS, paths, PATCH, saved)
    return data, torch.load(saved, weights_only=False)


def check_case(name: str, case: dict[str, Any]) -> None:
    """The caller's tensors after the call against float64 references of its arguments."""
    assert case["in_place"] is True, f"{name}: an output is no longer the caller's tensor"
    args, outputs, op = case["args"], case["outputs"], case["op"]
    dtype = outputs[0].dtype
    if op == "rms_norm":
        _out, x, weight, eps = args
        assert_close(outputs[0], ref_rmsnorm(x, weight, eps, False), dtype, name)
    elif op == "fused_add_rms_norm":
        x, residual, weight, eps = args
        total = x.double() + residual.double()
        assert_close(outputs[0], ref_rmsnorm(total, weight, eps, False), dtype, name)
        assert_close(outputs[1], total, dtype, f"{name} (residual)")
    elif op.endswith("_and_mul"):
        assert_close(outputs[0], ref_act(args[1], op.removesuffix("_and_mul")), dtype, name)
    else:
        positions, q, k, head_size, cache, is_neox = args
        assert_close(outputs[0], ref_rope(q, positions, cache, head_size, is_neox), dtype,
                     f"{name} (query)")
        assert_close(outputs[1], ref_rope(k, positions, cache, head_size, is_neox), dtype,
                     f"{name} (key)")
        values = q.shape[1] + k.shape[1]
        assert torch.equal(outputs[2][:, values:], case["qkv_before"][:, values:]), name


def test_stock_every_op_is_missing(paths: tuple[Path, ...], tmp_path: Path) -> None:
    data, cases = run_ops(paths, tmp_path, stock=True)
    assert len(cases) == 26 and data["errors"].keys() == cases.keys()
    for name, error in data["errors"].items():
        op = name.split(" ")[0]
        assert error == f"AttributeError: '_OpNamespace' '_C' object has no attribute '{op}'"


def test_patched_ops_match_the_reference_in_place(paths: tuple[Path, ...],
                                                  tmp_path: Path) -> None:
    data, cases = run_ops(paths, tmp_path)
    assert set(data["modules"].values()) == {"sglang_shims.kernels.standin.vllm_ops"}
    assert data["errors"] == {} and len(cases) == 26
    for name, case in cases.items():
        check_case(name, case)


def test_with_vllm_ops_registered_the_patch_retires(paths: tuple[Path, ...],
                                                    tmp_path: Path) -> None:
    data = run_json(OPS, paths, args=(str(tmp_path / "cases.pt"), "with-ops"))
    assert data["state"] == "retired", data
    assert data["modules"] == {name: "vllm._custom_ops" for name in NAMES}


def test_outside_the_vllm_range_it_is_left_alone(paths: tuple[Path, ...],
                                                 tmp_path: Path) -> None:
    """vllm 0.7.0 dropped the activation functions; a vllm claiming it is not patched."""
    later = write_package(tmp_path, {**metadata("vllm", "0.7.0"), **metadata("sglang", "0.4.2")})
    data = run_json(OPS, (later, paths[1]), args=(str(tmp_path / "cases.pt"),))
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
