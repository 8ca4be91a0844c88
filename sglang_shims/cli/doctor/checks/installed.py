"""What is installed (Python, sglang, the kernel, torch, triton, ...), with a word on the
combinations that matter."""

from __future__ import annotations

import sys

from ....engine.gates import satisfies
from ..facts import Facts
from ..finding import Finding, Level
from ..version_text import minor_of, public_version


def check_versions(facts: Facts) -> list[Finding]:
    """One finding per piece of the stack, failing where a combination cannot work."""
    out: list[Finding] = []
    python_detail = f"Python {facts.python} ({sys.executable})"
    wanted = facts.requires_python.get("sglang", "")
    if wanted and not satisfies(facts.python, wanted)[0]:
        out.append(Finding("python", Level.FAIL,
                           f"{python_detail}; sglang {facts.version('sglang')} requires "
                           f"Python {wanted}", f"use a Python that matches {wanted}"))
    else:
        out.append(Finding("python", Level.OK, python_detail))
    sglang = facts.version("sglang")
    out.append(Finding("sglang", Level.OK, f"sglang {sglang}") if sglang
               else Finding("sglang", Level.INFO, "sglang is not installed"))
    out.append(_kernel_finding(facts))
    out.append(_torch_finding(facts))
    for dist in ("triton", "transformers"):
        version = facts.version(dist)
        out.append(Finding(dist, Level.OK, f"{dist} {version}") if version
                   else Finding(dist, Level.INFO, f"{dist} is not installed"))
    flashinfer = [(d, v) for d in ("flashinfer-python", "flashinfer-cubin", "flashinfer-jit-cache")
                  if (v := facts.version(d))]
    out.append(Finding("flashinfer", Level.OK, ", ".join(f"{d} {v}" for d, v in flashinfer))
               if flashinfer else
               Finding("flashinfer", Level.INFO, "flashinfer-python is not installed"))
    return out


def _kernel_finding(facts: Facts) -> Finding:
    old, new = facts.version("sgl-kernel"), facts.version("sglang-kernel")
    where = f" (files in {facts.kernel_dir})" if facts.kernel_dir else ""
    if old and new:
        disk = (f"; sgl_kernel/version.py says {facts.kernel_file_version}, so those files are"
                " the ones on disk") if facts.kernel_file_version else ""
        return Finding(
            "sgl-kernel", Level.WARN,
            f"both sgl-kernel {old} and sglang-kernel {new} are installed: they install the "
            f"same sgl_kernel/ tree and whichever was installed last wins{disk}",
            "keep one: pip uninstall -y sgl-kernel sglang-kernel, then install the one your "
            "sglang pins (sgl-kernel up to sglang 0.5.9, sglang-kernel from 0.5.10)")
    if old or new:
        dist = "sgl-kernel" if old else "sglang-kernel"
        return Finding("sgl-kernel", Level.OK, f"{dist} {old or new}{where}")
    return Finding("sgl-kernel", Level.INFO, "no kernel distribution (sgl-kernel or sglang-kernel) "
                   "is installed")


def _torch_finding(facts: Facts) -> Finding:
    version = facts.version("torch")
    if not version:
        return Finding("torch", Level.INFO, "torch is not installed")
    build = {"cuda": f"CUDA {facts.torch_cuda}", "rocm": "ROCm build",
             "cpu": "CPU-only build"}.get(facts.torch_build, "build not determined")
    if facts.torch_error:
        return Finding("torch", Level.FAIL, f"torch {version} ({build}) fails to import: "
                       f"{facts.torch_error}", f"reinstall it: pip install --force-reinstall "
                       f"'torch=={public_version(version)}'")
    torch_major = (minor_of(facts.torch_cuda) or (0, 0))[0]
    driver_major = (facts.driver_cuda or 0) // 1000
    if facts.torch_build == "cuda" and facts.driver_cuda and driver_major < torch_major:
        driver = f"{driver_major}.{facts.driver_cuda % 1000 // 10}"
        return Finding(
            "torch", Level.FAIL,
            f"torch {version} is a CUDA {facts.torch_cuda} build; the NVIDIA driver "
            f"({facts.driver_version or '?'}) supports CUDA {driver} only, so torch cannot use "
            "the GPU",
            f"upgrade the driver to one for CUDA {torch_major}, or install a torch built for "
            f"CUDA {driver_major}: pip install 'torch=={public_version(version)}' --index-url "
            f"https://download.pytorch.org/whl/cu{driver_major}8")
    if facts.torch_sees_gpu is False and facts.caps:
        return Finding("torch", Level.WARN, f"torch {version} ({build}): "
                       "torch.cuda.is_available() is "
                       f"False, but {facts.env.gpu_source} lists {len(facts.caps)} GPU(s)",
                       "check CUDA_VISIBLE_DEVICES and that the driver matches torch's CUDA")
    if facts.torch_build == "cpu" and facts.caps:
        return Finding("torch", Level.FAIL, f"torch {version} is a CPU-only build, and this "
                       "machine has NVIDIA GPUs", "install a CUDA build: pip install torch=="
                       + public_version(version)
                       + " --index-url https://download.pytorch.org/whl/cu128")
    return Finding("torch", Level.OK, f"torch {version} ({build})")
