"""triton-ptxas-blackwell over the Triton releases and Blackwell archs it is gated on.

Each case builds a stand-in triton distribution (dist-info, the lines of
``backends/nvidia/compiler.py`` and ``knobs.py`` the patch reads, in the form each
release has them, and ``bin/ptxas*`` shell scripts printing the bundled release), a
one-file ``sglang`` (the patch acts when it is imported) and two CUDA toolkits with a
fake ``bin/ptxas``: one in ``$CUDA_HOME`` and one where the patch looks for system
toolkits (its ``SYSTEM_GLOBS``, pointed at the tree, as is ``PIP_LAYOUTS``: the host's
/usr/local/cuda* are not looked at).  ``SGLANG_SHIMS_GPU_CAPABILITY`` is the GPU.

The expected table is written out from the real wheels (see the manifest's [range]);
``test_sniffed_like_the_real_wheels`` checks the stand-ins against it.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from ..support.patch_runs import run_json
from ..support.programs import program

PATCH = "triton-ptxas-blackwell"

# release -> (bundled binaries, ptx_get_version accepts CUDA 13, knob style)
TRITON = {
    "3.2.0": ({"ptxas": "12.4"}, False, "3.2"),
    "3.3.1": ({"ptxas": "12.4", "ptxas-blackwell": "12.8"}, False, "3.3"),
    "3.4.0": ({"ptxas": "12.8"}, False, "3.4"),
    "3.5.1": ({"ptxas": "12.8"}, True, "3.4"),
    "3.6.0": ({"ptxas": "12.8", "ptxas-blackwell": "12.9"}, True, "3.6"),
    "3.7.0": ({"ptxas": "12.8", "ptxas-blackwell": "13.1"}, True, "3.6"),
}
VARIABLE = {"3.3": "TRITON_PTXAS-BLACKWELL_PATH", "3.4": "TRITON_PTXAS_PATH",
            "3.6": "TRITON_PTXAS_BLACKWELL_PATH"}

COMPILER = {  # the lines of backends/nvidia/compiler.py the patch looks for
    "3.2": 'def get_ptxas_version():\n    return _path_to_binary("ptxas")\n',
    "3.3": 'def get_ptxas(arch: int):\n    name = "ptxas-blackwell" if arch >= 100 else'
           ' "ptxas"\n',
    "3.4": "def get_ptxas() -> knobs.NvidiaTool:\n    return knobs.nvidia.ptxas\n",
    "3.6": "def get_ptxas(arch: int) -> knobs.NvidiaTool:\n    return"
           " knobs.nvidia.ptxas_blackwell if arch >= 100 else knobs.nvidia.ptxas\n",
}
CUDA13 = "def ptx_get_version(cuda_version):\n    if major >= 13:\n        return 90\n"
KNOBS_36 = '    ptxas_blackwell: env_nvidia_tool = env_nvidia_tool("ptxas-blackwell")\n'

HARNESS = program("patches/triton_ptxas_blackwell")


def ptxas(path: Path, release: str | None) -> Path:
    """A shell script that answers --version like ptxas (``None``: prints no release)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "echo 'ptxas: NVIDIA (R) Ptx optimizing assembler'\n"
    if release:
        text += f"echo 'Cuda compilation tools, release {release}, V{release}.1'\n"
    path.write_text("#!/bin/sh\n" + text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def build(root: Path, triton: str, *, dist: str = "triton", home: str | None = "13.1",
          system: str | None = "12.9", pip: str | None = None, version: str = "") -> Path:
    binaries, cuda13, style = TRITON[triton]
    version = version or triton
    info = root / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    nvidia = root / "triton" / "backends" / "nvidia"
    nvidia.mkdir(parents=True)
    (nvidia / "compiler.py").write_text(COMPILER[style] + (CUDA13 if cuda13 else ""))
    (root / "triton" / "knobs.py").write_text(KNOBS_36 if style == "3.6" else "")
    for binary, release in binaries.items():
        ptxas(nvidia / "bin" / binary, release)
    (root / "sglang").mkdir()
    (root / "sglang" / "__init__.py").write_text("")
    if home:
        ptxas(root / "cuda-home" / "bin" / "ptxas", home)
    if system:
        ptxas(root / f"system-cuda-{system}" / "bin" / "ptxas", system)
    if pip:
        ptxas(root / "nvidia" / "cu13" / "bin" / "ptxas", pip)
    (root / "bin").mkdir()
    return root


def run(root: Path, capability: str, **extra: str) -> tuple[dict[str, object], dict[str, str]]:
    env = {"PATCH_ID": PATCH, "TREE": str(root), "SGLANG_SHIMS_GPU_CAPABILITY": capability,
           "PATH": f"{root / 'bin'}:{os.defpath}"}
    if (root / "cuda-home").is_dir():
        env["CUDA_HOME"] = str(root / "cuda-home")
    env.update(extra)
    data = run_json(HARNESS, (root,), env, timeout=120)
    return data["status"], data["env"]


# (triton, GPU) -> expected: "retired", "failed", or the release of the ptxas chosen
# ($CUDA_HOME has 13.1, the system toolkit 12.9; 3.3/3.4 accept only 12.x).
EXPECTED = {
    ("3.3.1", "10.0"): "retired", ("3.3.1", "12.0"): "retired",
    ("3.3.1", "10.3"): "12.9", ("3.3.1", "12.1"): "12.9", ("3.3.1", "11.0"): "failed",
    ("3.4.0", "10.0"): "retired", ("3.4.0", "12.0"): "retired",
    ("3.4.0", "10.3"): "12.9", ("3.4.0", "12.1"): "12.9", ("3.4.0", "11.0"): "failed",
    ("3.5.1", "10.0"): "retired", ("3.5.1", "12.0"): "retired",
    ("3.5.1", "10.3"): "13.1", ("3.5.1", "12.1"): "13.1", ("3.5.1", "11.0"): "13.1",
    ("3.6.0", "10.0"): "retired", ("3.6.0", "12.0"): "retired",
    ("3.6.0", "10.3"): "retired", ("3.6.0", "12.1"): "retired", ("3.6.0", "11.0"): "13.1",
}


@pytest.mark.parametrize(("triton", "gpu"), sorted(EXPECTED))
def test_matrix(triton: str, gpu: str, tmp_path: Path) -> None:
    root = build(tmp_path, triton)
    status, env = run(root, gpu)
    want = EXPECTED[(triton, gpu)]
    variable = VARIABLE[TRITON[triton][2]]
    if want in ("retired", "failed"):
        assert status["state"] == want, status
        assert env == {}
        if want == "failed":
            assert "accepts only a CUDA 12.x ptxas" in str(status["reason"])
            assert "upgrade triton to >= 3.5" in str(status["reason"])
        else:
            assert "bundled" in str(status["reason"])
        return
    chosen = str(root / "cuda-home/bin/ptxas") if want == "13.1" else \
        str(root / "system-cuda-12.9/bin/ptxas")
    assert status["state"] == "applied", status
    assert env == {variable: chosen, "SGLANG_SHIMS_TRITON_PTXAS": chosen}
    assert status["changes"] == [f"setitem os.environ[{variable!r}]",
                                 "setitem os.environ['SGLANG_SHIMS_TRITON_PTXAS']"]


@pytest.mark.parametrize(("triton", "state"), [("3.2.0", "not-applicable"),
                                               ("3.7.0", "retired")])
def test_outside_the_fixable_releases(triton: str, state: str, tmp_path: Path) -> None:
    status, env = run(build(tmp_path, triton), "12.1")
    assert status["state"] == state, status
    assert env == {}
    if state == "retired":
        assert "bundles ptxas-blackwell 13.1" in str(status["reason"])


def test_hopper_is_not_applicable(tmp_path: Path) -> None:
    status, _ = run(build(tmp_path, "3.5.1"), "9.0")
    assert status["state"] == "not-applicable"


def test_pytorch_triton_nightly(tmp_path: Path) -> None:
    """pytorch-triton 3.5.0+git... (triton #8539, DGX Spark): same as triton 3.5."""
    root = build(tmp_path, "3.5.1", dist="pytorch-triton", version="3.5.0+git7416ffcb")
    status, env = run(root, "12.1")
    assert status["state"] == "applied", status
    assert "pytorch-triton 3.5.0+git7416ffcb in >=3.3" in str(status["reason"])
    assert env["TRITON_PTXAS_PATH"] == str(root / "cuda-home/bin/ptxas")


def test_pip_nvcc_wheel_is_found(tmp_path: Path) -> None:
    root = build(tmp_path, "3.5.1", home=None, system=None, pip="13.0")
    status, env = run(root, "12.1")
    assert status["state"] == "applied", status
    assert env["TRITON_PTXAS_PATH"] == str(root / "nvidia/cu13/bin/ptxas")


def test_nothing_capable_fails_with_the_remedy(tmp_path: Path) -> None:
    root = build(tmp_path, "3.5.1", home="12.8", system="12.8")
    status, env = run(root, "12.1")
    assert status["state"] == "failed"
    reason = str(status["reason"])
    assert "no ptxas that can assemble sm_121a was found for triton 3.5.1" in reason
    assert "install CUDA >= 12.9" in reason and "triton >= 3.6" in reason
    assert env == {}
    notes = json.dumps(status["notes"])
    assert "release 12.8" in notes and "cannot assemble sm_121a" in notes


def test_your_capable_setting_is_kept(tmp_path: Path) -> None:
    root = build(tmp_path, "3.5.1")
    mine = str(root / "system-cuda-12.9/bin/ptxas")
    status, env = run(root, "12.1", TRITON_PTXAS_PATH=mine)
    assert status["state"] == "retired"
    assert env == {"TRITON_PTXAS_PATH": mine}


def test_your_incapable_setting_is_kept_and_reported(tmp_path: Path) -> None:
    root = build(tmp_path, "3.5.1")
    mine = str(ptxas(root / "old" / "ptxas", "12.8"))
    status, env = run(root, "12.1", TRITON_PTXAS_PATH=mine)
    assert status["state"] == "failed"
    assert "it is your setting, so it is left as it is" in str(status["reason"])
    assert env == {"TRITON_PTXAS_PATH": mine}


def test_child_processes_report_the_same_change(tmp_path: Path) -> None:
    """sglang's schedulers inherit the variable set in the launcher: still 'applied'."""
    root = build(tmp_path, "3.6.0")
    parent, env = run(root, "11.0")
    assert parent["state"] == "applied"
    child, child_env = run(root, "11.0", **env)
    assert child["state"] == "applied", child
    assert child_env == env
    assert "inherited" in json.dumps(child["notes"])


def test_mixed_machine_needs_every_arch(tmp_path: Path) -> None:
    """A GB10 (12.1) next to a Thor (11.0) on triton 3.6: one ptxas for both."""
    root = build(tmp_path, "3.6.0")
    status, env = run(root, "12.1,11.0")
    assert status["state"] == "applied"
    assert env["TRITON_PTXAS_BLACKWELL_PATH"] == str(root / "cuda-home/bin/ptxas")


def test_sniffed_like_the_real_wheels(tmp_path: Path) -> None:
    """The stand-ins above are read the way the release table says the wheels are."""
    import importlib.util
    import sys

    path = Path(__file__).resolve().parents[2] / "patches" / PATCH / "patch.py"
    spec = importlib.util.spec_from_file_location("_ptxas_patch_for_test", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        for triton in TRITON:
            root = build(tmp_path / triton, triton)
            version = module.parse_version(triton)
            assert module.triton_tool(version, root / "triton") == module.triton_tool(version)
    finally:
        sys.modules.pop(spec.name, None)
