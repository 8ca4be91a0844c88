"""Which kernels would serve ``sgl_kernel`` here: the installed kernel, sglang-shims'
fallback, or nothing.

Not in the registry of :mod:`~sglang_shims.cli.doctor.checks`: it needs the findings of
those checks (a kernel that fails to load) and the survey of the patches, so
:func:`~sglang_shims.cli.doctor.report.doctor` runs it last.
"""

from __future__ import annotations

from typing import Any

from ....catalog.manifest import Gate
from ....engine.gates import Environment
from ....patching.dists import KERNEL_DISTS
from ..finding import Finding, Level


def serving_tier(findings: list[Finding], env: Environment, result: Any) -> Finding:
    """Which kernels would serve sglang here, and why (issue: JIT fallback tier)."""
    fallback = next((v for v in result.views
                     if v.manifest.id == "sgl-kernel-triton-fallback"), None)
    kernel = env.first_installed(KERNEL_DISTS)
    broken = [f for f in findings if f.check in ("sgl-kernel-abi", "sgl-kernel-arch",
                                                 "sgl-kernel-import") and f.level == Level.FAIL]
    if kernel[1] is not None and not broken:
        return Finding("serving tier", Level.INFO,
                       f"{kernel[0]} {kernel[1]} (ahead-of-time kernels) serves sgl_kernel")
    why = f"{broken[0].check}: {broken[0].detail}" if broken else "no kernel is installed"
    if fallback is None or not fallback.enabled:
        return Finding("serving tier", Level.FAIL, f"nothing can serve sgl_kernel ({why}) and"
                       " the fallback patch is disabled",
                       "enable sgl-kernel-triton-fallback, or install a matching kernel")
    if fallback.judged.state == "not-applicable":
        return Finding("serving tier", Level.WARN, f"sgl_kernel cannot serve ({why}) and the"
                       f" fallback does not apply here: {fallback.judged.reason}",
                       _not_applicable_remedy(env, fallback.manifest.requires))
    tier = "Triton (JIT, compiled for this GPU)" if env.version("triton") else \
        "eager PyTorch (triton is not installed)"
    return Finding("serving tier", Level.INFO, f"sglang-shims' fallback kernels would serve"
                   f" sgl_kernel: {tier}; because {why}")


def _not_applicable_remedy(env: Environment, gates: tuple[Gate, ...]) -> str:
    """What to install when the fallback's gates fail: the first missing piece, else a kernel."""
    for gate in gates:
        if env.first_installed(gate.dists)[1] is None:
            what = ("sglang itself (there is nothing to serve without it)"
                    if gate.dists[0] == "sglang" else gate.dists[0])
            return f"install {what}: pip install '{gate.dists[0]}{gate.spec}'"
    return "install a kernel built for this torch and GPU (the version your sglang pins)"
