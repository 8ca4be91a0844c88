"""sgl-kernel-cuda-runtime-preload over the kernel versions it is gated on.

Real CUDA libraries are not needed (and fake ones cannot be dlopened): each test builds
a tree with

* a stand-in ``torch`` (``torch/version.py`` in the real file's format and a dist-info
  with the CUDA local label), never a real torch;
* pip-style CUDA folders, ``nvidia/cuda_runtime/lib/libcudart.so.12``,
  ``nvidia/cuda_nvrtc/lib/libnvrtc.so.12`` (or ``nvidia/cu13/lib/*.so.13``): empty files;
* a stand-in ``sgl_kernel`` of a given version (our code), whose ``__init__`` does what
  the real ones do at import: load ``common_ops``, which fails unless
  ``libnvrtc.so.<N>`` is already loaded (the real library NEEDs it and has no RUNPATH),
  and, for 0.3.11 <= version < 0.3.18.post3, the CUDA-home check that raises
  ``RuntimeError("Could not find CUDA lib directory.")``, with the same three guesses;
* ``fake_dl``: a record of "loaded" sonames and of those "on the system search path";
  the patch's ``load``/``is_loaded``/``on_search_path`` seams and its
  ``DEFAULT_CUDA_HOME`` (the host's /usr/local/cuda) are pointed at it and the tree.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from ..support.patch_runs import run_json
from ..support.programs import program

PATCH = "sgl-kernel-cuda-runtime-preload"

STANDIN_KERNEL = '''\
"""Stand-in sgl_kernel {version}: the import-time steps of the real package."""
import os
import shutil
from pathlib import Path

import fake_dl
import torch

MAJOR = torch.version.cuda.split(".")[0] if torch.version.cuda else None


def _find_cuda_home():
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if home is None:
        nvcc = shutil.which("nvcc")
        home = os.path.dirname(os.path.dirname(nvcc)) if nvcc else os.environ["DEFAULT_CUDA_HOME"]
    return home


# common_ops: NEEDED libcudart.so.N and libnvrtc.so.N, no RUNPATH
for needed in ("libcudart", "libnvrtc"):
    soname = f"{{needed}}.so.{{MAJOR}}"
    if MAJOR and not fake_dl.is_loaded(soname) and not fake_dl.on_system_path(soname):
        raise ImportError(f"{{soname}}: cannot open shared object file: No such file or directory")

if {check} and torch.version.cuda is not None:
    cuda_home = Path(_find_cuda_home())
    if (cuda_home / "lib").is_dir():
        cuda_path = cuda_home / "lib"
    elif (cuda_home / "lib64").is_dir():
        cuda_path = cuda_home / "lib64"
    else:
        for path in cuda_home.rglob("libcudart.so.12"):
            cuda_path = path.parent
            break
        else:
            raise RuntimeError("Could not find CUDA lib directory.")

common_ops = object()
'''

FAKE_DL = program("patches/sgl_kernel_cuda_runtime_preload/tree/fake_dl")
HARNESS = program("patches/sgl_kernel_cuda_runtime_preload/harness")


def has_home_check(version: str) -> bool:
    from packaging.version import Version

    return Version("0.3.11") <= Version(version) < Version("0.3.18.post3")


def build(root: Path, kernel: str, *, cuda: str | None = "12.8", pip_libs: bool = True) -> Path:
    """The tree described in the module docstring; ``cuda=None``: a CPU build of torch."""
    major = cuda.split(".")[0] if cuda else "12"
    label = f"+cu{cuda.replace('.', '')}" if cuda else "+cpu"
    files = {
        "torch/__init__.py": "from . import version\n",
        "torch/version.py": textwrap.dedent(f"""\
            from typing import Optional

            __version__ = '2.8.0{label}'
            cuda: Optional[str] = {cuda and repr(cuda)}
            hip: Optional[str] = None
            """),
        f"torch-2.8.0{label}.dist-info/METADATA":
            f"Metadata-Version: 2.1\nName: torch\nVersion: 2.8.0{label}\n",
        "fake_dl.py": FAKE_DL,
        "sgl_kernel/__init__.py": STANDIN_KERNEL.format(version=kernel,
                                                        check=has_home_check(kernel)),
    }
    dist = "sglang_kernel" if kernel.startswith("0.4") else "sgl_kernel"
    name = dist.replace("_", "-")
    files[f"{dist}-{kernel}.dist-info/METADATA"] = \
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {kernel}\n"
    if pip_libs:
        if major == "13":
            files["nvidia/cu13/lib/libcudart.so.13"] = ""
            files["nvidia/cu13/lib/libnvrtc.so.13"] = ""
        else:
            files[f"nvidia/cuda_runtime/lib/libcudart.so.{major}"] = ""
            files[f"nvidia/cuda_nvrtc/lib/libnvrtc.so.{major}"] = ""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (root / "bin").mkdir(exist_ok=True)  # PATH: no nvcc
    return root


def run(root: Path, *, stock: bool = False, already: tuple[str, ...] = (),
        system: tuple[str, ...] = (), **extra: str) -> dict[str, object]:
    env = {"PATCH_ID": PATCH, "PATH": str(root / "bin"),
           "DEFAULT_CUDA_HOME": str(root / "no-toolkit"),  # the host's /usr/local/cuda
           "ALREADY_LOADED": json.dumps(already), "ON_SYSTEM_PATH": json.dumps(system), **extra}
    if stock:
        env["STOCK"] = "1"
    return run_json(HARNESS, (root,), env, activate=not stock, timeout=120)


def status_of(data: dict[str, object]) -> dict[str, object]:
    status = data["status"]
    assert isinstance(status, dict)
    return status


# Kernel versions around every boundary of the gate and of the CUDA-home check.
# 0.1.0-0.3.4.post1: the kernels of issue 5094's era still on PyPI; their common_ops NEEDs
# libnvrtc.so.12 too (read from each wheel's dynamic section).
KERNELS = ["0.1.0", "0.2.9", "0.3.4.post1", "0.3.5", "0.3.10", "0.3.11", "0.3.16.post3",
           "0.3.18.post2", "0.3.18.post3", "0.3.21", "0.4.0", "0.4.10"]


@pytest.mark.parametrize("kernel", KERNELS)
def test_matrix_pip_only_cuda12(kernel: str, tmp_path: Path) -> None:
    """torch cu128 from pip, no toolkit, libcudart already loaded by torch."""
    root = build(tmp_path, kernel)
    stock = run(root, stock=True, already=("libcudart.so.12",))
    assert stock["error"] == ("ImportError: libnvrtc.so.12: cannot open shared object file:"
                              " No such file or directory")

    data = run(root, already=("libcudart.so.12",))
    assert data.get("imported") is True, data
    assert data["loaded"] == {"libnvrtc.so.12": str(root / "nvidia/cuda_nvrtc/lib/libnvrtc.so.12")}
    status = status_of(data)
    assert status["state"] == "applied", status
    notes = "\n".join(map(str, status["notes"]))  # type: ignore[call-overload]
    assert "libcudart.so.12 is already loaded" in notes
    assert f"CUDA 12.8 (from {root / 'torch/version.py'})" in notes  # read, not imported
    if has_home_check(kernel):
        assert data["CUDA_HOME"] == str(root / "nvidia/cuda_runtime")
        assert status["changes"] == ["setitem os.environ['CUDA_HOME']"]
    else:
        assert data["CUDA_HOME"] is None
        assert status["changes"] == []


@pytest.mark.parametrize("kernel", ["0.3.16.post3", "0.3.18.post2"])
def test_cuda_home_check_alone(kernel: str, tmp_path: Path) -> None:
    """libnvrtc on the system path: only the CUDA-home RuntimeError is left."""
    root = build(tmp_path, kernel)
    kw = {"already": ("libcudart.so.12",), "system": ("libnvrtc.so.12",)}
    stock = run(root, stock=True, **kw)  # type: ignore[arg-type]
    assert stock["error"] == "RuntimeError: Could not find CUDA lib directory."
    data = run(root, **kw)  # type: ignore[arg-type]
    assert data.get("imported") is True, data
    assert data["loaded"] == {}
    assert data["CUDA_HOME"] == str(root / "nvidia/cuda_runtime")


def test_cuda13_layout(tmp_path: Path) -> None:
    """torch cu130: nvidia/cu13/lib holds both; torch.version.cuda read from the module."""
    root = build(tmp_path, "0.4.0", cuda="13.0")
    data = run(root, IMPORT_TORCH="1")
    assert data.get("imported") is True, data
    assert data["loaded"] == {"libcudart.so.13": str(root / "nvidia/cu13/lib/libcudart.so.13"),
                              "libnvrtc.so.13": str(root / "nvidia/cu13/lib/libnvrtc.so.13")}
    notes = "\n".join(map(str, status_of(data)["notes"]))  # type: ignore[call-overload]
    assert "CUDA 13.0 (from torch.version.cuda)" in notes


def test_cuda13_with_home_check(tmp_path: Path) -> None:
    """A cu130 build of 0.3.16.post3 passes its check with CUDA_HOME=nvidia/cu13."""
    root = build(tmp_path, "0.3.16.post3", cuda="13.0")
    data = run(root)
    assert data.get("imported") is True, data
    assert data["CUDA_HOME"] == str(root / "nvidia/cu13")


def test_nothing_to_do_retires(tmp_path: Path) -> None:
    root = build(tmp_path, "0.3.21")
    data = run(root, already=("libcudart.so.12", "libnvrtc.so.12"))
    assert data.get("imported") is True
    status = status_of(data)
    assert status["state"] == "retired", status
    assert data["loaded"] == {}


def test_cpu_torch_retires(tmp_path: Path) -> None:
    root = build(tmp_path, "0.3.16.post3", cuda=None)
    data = run(root)
    assert data.get("imported") is True
    status = status_of(data)
    assert status["state"] == "retired"
    assert "torch has no CUDA" in str(status["reason"])


def test_users_cuda_home_is_not_changed(tmp_path: Path) -> None:
    root = build(tmp_path, "0.3.16.post3")
    bad = str(tmp_path / "my-cuda")
    data = run(root, CUDA_HOME=bad)
    assert data["CUDA_HOME"] == bad
    assert data["error"] == "RuntimeError: Could not find CUDA lib directory."
    status = status_of(data)
    assert status["state"] == "failed"
    assert "it is your setting" in str(status["reason"])
    # the preload still happened (it cannot be rolled back, and it is harmless)
    assert "libnvrtc.so.12" in data["loaded"]  # type: ignore[operator]


def test_no_pip_runtime_fails_clearly(tmp_path: Path) -> None:
    root = build(tmp_path, "0.3.16.post3", pip_libs=False)
    data = run(root, already=("libcudart.so.12",), system=("libnvrtc.so.12",))
    assert data["error"] == "RuntimeError: Could not find CUDA lib directory."
    status = status_of(data)
    assert status["state"] == "failed"
    assert "no pip CUDA runtime" in str(status["reason"])


def test_below_the_gate(tmp_path: Path) -> None:
    """0.0.x kernels are gone from PyPI: their libraries cannot be read, so no gate."""
    root = build(tmp_path, "0.0.8")
    data = run(root, already=("libcudart.so.12", "libnvrtc.so.12"))
    status = status_of(data)
    assert status["state"] == "not-applicable"
    assert "0.0.8 not in >=0.1.0" in str(status["reason"])
