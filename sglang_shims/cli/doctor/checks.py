"""Checks 1-2: what is installed (Python, sglang, kernel, torch, ...) and the GPUs."""

from __future__ import annotations

import sys

from ...engine.gates import satisfies
from .facts import Facts
from .finding import Finding
from .versions import minor_of, public_version, sm_name


def check_versions(facts: Facts) -> list[Finding]:
    """Check 1: what is installed, with a word on the combinations that matter."""
    out: list[Finding] = []
    python_detail = f"Python {facts.python} ({sys.executable})"
    wanted = facts.requires_python.get("sglang", "")
    if wanted and not satisfies(facts.python, wanted)[0]:
        out.append(Finding("python", "fail",
                           f"{python_detail}; sglang {facts.version('sglang')} requires "
                           f"Python {wanted}", f"use a Python that matches {wanted}"))
    else:
        out.append(Finding("python", "ok", python_detail))
    sglang = facts.version("sglang")
    out.append(Finding("sglang", "ok", f"sglang {sglang}") if sglang
               else Finding("sglang", "info", "sglang is not installed"))
    out.append(_kernel_finding(facts))
    out.append(_torch_finding(facts))
    for dist in ("triton", "transformers"):
        version = facts.version(dist)
        out.append(Finding(dist, "ok", f"{dist} {version}") if version
                   else Finding(dist, "info", f"{dist} is not installed"))
    flashinfer = [(d, v) for d in ("flashinfer-python", "flashinfer-cubin", "flashinfer-jit-cache")
                  if (v := facts.version(d))]
    out.append(Finding("flashinfer", "ok", ", ".join(f"{d} {v}" for d, v in flashinfer))
               if flashinfer else
               Finding("flashinfer", "info", "flashinfer-python is not installed"))
    return out


def _kernel_finding(facts: Facts) -> Finding:
    old, new = facts.version("sgl-kernel"), facts.version("sglang-kernel")
    where = f" (files in {facts.kernel_dir})" if facts.kernel_dir else ""
    if old and new:
        disk = (f"; sgl_kernel/version.py says {facts.kernel_file_version}, so those files are"
                " the ones on disk") if facts.kernel_file_version else ""
        return Finding(
            "sgl-kernel", "warn",
            f"both sgl-kernel {old} and sglang-kernel {new} are installed: they install the "
            f"same sgl_kernel/ tree and whichever was installed last wins{disk}",
            "keep one: pip uninstall -y sgl-kernel sglang-kernel, then install the one your "
            "sglang pins (sgl-kernel up to sglang 0.5.9, sglang-kernel from 0.5.10)")
    if old or new:
        dist = "sgl-kernel" if old else "sglang-kernel"
        return Finding("sgl-kernel", "ok", f"{dist} {old or new}{where}")
    return Finding("sgl-kernel", "info", "no kernel distribution (sgl-kernel or sglang-kernel) "
                   "is installed")


def _torch_finding(facts: Facts) -> Finding:
    version = facts.version("torch")
    if not version:
        return Finding("torch", "info", "torch is not installed")
    build = {"cuda": f"CUDA {facts.torch_cuda}", "rocm": "ROCm build",
             "cpu": "CPU-only build"}.get(facts.torch_build, "build not determined")
    if facts.torch_error:
        return Finding("torch", "fail", f"torch {version} ({build}) fails to import: "
                       f"{facts.torch_error}", f"reinstall it: pip install --force-reinstall "
                       f"'torch=={public_version(version)}'")
    torch_major = (minor_of(facts.torch_cuda) or (0, 0))[0]
    driver_major = (facts.driver_cuda or 0) // 1000
    if facts.torch_build == "cuda" and facts.driver_cuda and driver_major < torch_major:
        driver = f"{driver_major}.{facts.driver_cuda % 1000 // 10}"
        return Finding(
            "torch", "fail",
            f"torch {version} is a CUDA {facts.torch_cuda} build; the NVIDIA driver "
            f"({facts.driver_version or '?'}) supports CUDA {driver} only, so torch cannot use "
            "the GPU",
            f"upgrade the driver to one for CUDA {torch_major}, or install a torch built for "
            f"CUDA {driver_major}: pip install 'torch=={public_version(version)}' --index-url "
            f"https://download.pytorch.org/whl/cu{driver_major}8")
    if facts.torch_sees_gpu is False and facts.caps:
        return Finding("torch", "warn", f"torch {version} ({build}): torch.cuda.is_available() is "
                       f"False, but {facts.env.gpu_source} lists {len(facts.caps)} GPU(s)",
                       "check CUDA_VISIBLE_DEVICES and that the driver matches torch's CUDA")
    if facts.torch_build == "cpu" and facts.caps:
        return Finding("torch", "fail", f"torch {version} is a CPU-only build, and this machine "
                       "has NVIDIA GPUs", "install a CUDA build: pip install torch==" +
                       public_version(version) + " --index-url https://download.pytorch.org/whl/cu128")
    return Finding("torch", "ok", f"torch {version} ({build})")


def check_gpus(facts: Facts) -> list[Finding]:
    """Check 2: GPUs, compute capabilities, driver; mixed architectures warn."""
    caps = facts.caps
    driver = ""
    if facts.driver_version or facts.driver_cuda:
        cuda = (f", CUDA {facts.driver_cuda // 1000}.{facts.driver_cuda % 1000 // 10}"
                if facts.driver_cuda else "")
        driver = f"; driver {facts.driver_version or '?'}{cuda}"
    out = []
    if facts.gpu_override_problem:
        out.append(Finding(
            "gpu", "fail", f"{facts.gpu_override_problem}. sglang-shims' GPU gates cannot be "
            "judged while it is set; the GPUs below were detected without it",
            "export SGLANG_SHIMS_GPU_CAPABILITY=12.0 (your GPU's capability, as nvidia-smi "
            "--query-gpu=compute_cap prints it), or unset it"))
    if not caps:
        source = f" ({facts.env.gpu_source})" if facts.env.gpu_source else ""
        return [*out, Finding("gpu", "info", f"no GPU found{source}{driver}")]
    names = facts.gpu_names if len(facts.gpu_names) == len(caps) else [""] * len(caps)
    shown = ", ".join(f"GPU{i} {(n + ' ') if n else ''}{sm_name(c)} (cc {c[0]}.{c[1]})"
                      for i, (n, c) in enumerate(zip(names, caps, strict=True)))
    detail = f"{shown} [{facts.env.gpu_source}]{driver}"
    if len(set(caps)) > 1:
        return [*out, Finding(
            "gpu", "warn",
            f"{detail}: mixed architectures. sgl_kernel picks its library and FlashInfer its "
            "JIT targets once per process, so one server spanning these GPUs can meet "
            "'no kernel image' on some of them (breakage #12 flashinfer-arch-list-env)",
            "run one server per architecture (CUDA_VISIBLE_DEVICES=<GPUs of one kind>), and "
            "set FLASHINFER_CUDA_ARCH_LIST to every architecture in use")]
    return [*out, Finding("gpu", "ok", detail)]
