"""The GPUs, their compute capabilities and the driver; mixed architectures warn."""

from __future__ import annotations

from .. import upstream
from ..facts import Facts
from ..finding import Finding, Level
from ..version_text import sm_name


def check_gpus(facts: Facts) -> list[Finding]:
    """GPUs, compute capabilities, driver; mixed architectures warn."""
    caps = facts.caps
    driver = ""
    if facts.driver_version or facts.driver_cuda:
        cuda = (f", CUDA {facts.driver_cuda // 1000}.{facts.driver_cuda % 1000 // 10}"
                if facts.driver_cuda else "")
        driver = f"; driver {facts.driver_version or '?'}{cuda}"
    out = []
    if facts.gpu_override_problem:
        out.append(Finding(
            "gpu", Level.FAIL, f"{facts.gpu_override_problem}. sglang-shims' GPU gates cannot be "
            "judged while it is set; the GPUs below were detected without it",
            "export SGLANG_SHIMS_GPU_CAPABILITY=12.0 (your GPU's capability, as nvidia-smi "
            "--query-gpu=compute_cap prints it), or unset it"))
    if not caps and facts.smi_problem:
        return [*out, Finding(
            "gpu", Level.WARN, f"the GPUs are unknown: {facts.smi_problem}{driver}. A driver "
            "that is not loaded or a GPU that is stuck does this; the checks below judge as "
            "if there were no GPU",
            "run nvidia-smi yourself: if it hangs or fails, look at the driver first (dmesg, "
            "nvidia-persistenced, a reboot); to judge the GPUs anyway, export "
            "SGLANG_SHIMS_GPU_CAPABILITY=9.0 (your GPUs' compute capabilities)")]
    if not caps:
        source = f" ({facts.env.gpu_source})" if facts.env.gpu_source else ""
        return [*out, Finding("gpu", Level.INFO, f"no GPU found{source}{driver}")]
    if facts.smi_problem:
        out.append(Finding("gpu", Level.INFO, f"{facts.smi_problem}; the GPUs are known from "
                           f"{facts.env.gpu_source}, the driver version is not"))
    names = facts.gpu_names if len(facts.gpu_names) == len(caps) else [""] * len(caps)
    shown = ", ".join(f"GPU{i} {(n + ' ') if n else ''}{sm_name(c)} (cc {c[0]}.{c[1]})"
                      for i, (n, c) in enumerate(zip(names, caps, strict=True)))
    detail = f"{shown} [{facts.env.gpu_source}]{driver}"
    if len(set(caps)) > 1:
        return [*out, Finding(
            "gpu", Level.WARN,
            f"{detail}: mixed architectures. sgl_kernel picks its library and FlashInfer its "
            "JIT targets once per process, so one server spanning these GPUs can meet "
            "'no kernel image' on some of them (flashinfer-arch-list-env: "
            f"{upstream.ARCH_LIST_ENV})",
            "run one server per architecture (CUDA_VISIBLE_DEVICES=<GPUs of one kind>), and "
            "set FLASHINFER_CUDA_ARCH_LIST to every architecture in use")]
    return [*out, Finding("gpu", Level.OK, detail)]
