"""``sglang-shims doctor``: the environment diagnosis plus what the patches would do.

The environment checks live in :mod:`sglang_shims.cli.doctor`; this adds one finding per patch that
would act (or has drifted) and any toggle problems, so one command answers "is this
environment sound, and what will sglang-shims change in it?".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...catalog.manifest import Gate
from ...engine.gates import Environment
from ..survey import survey
from . import Finding, diagnose


def serving_tier(findings: list[Finding], env: Environment, result: Any) -> Finding:
    """Which kernels would serve sglang here, and why (issue: JIT fallback tier)."""
    fallback = next((v for v in result.views
                     if v.manifest.id == "sgl-kernel-triton-fallback"), None)
    kernel = env.first_installed(("sgl-kernel", "sglang-kernel"))
    broken = [f for f in findings if f.check in ("sgl-kernel-abi", "sgl-kernel-arch",
                                                 "sgl-kernel-import") and f.level == "fail"]
    if kernel[1] is not None and not broken:
        return Finding("serving tier", "info",
                       f"{kernel[0]} {kernel[1]} (ahead-of-time kernels) serves sgl_kernel")
    why = f"{broken[0].check}: {broken[0].detail}" if broken else "no kernel is installed"
    if fallback is None or not fallback.enabled:
        return Finding("serving tier", "fail", f"nothing can serve sgl_kernel ({why}) and"
                       " the fallback patch is disabled",
                       "enable sgl-kernel-triton-fallback, or install a matching kernel")
    if fallback.judged.state == "not-applicable":
        return Finding("serving tier", "warn", f"sgl_kernel cannot serve ({why}) and the"
                       f" fallback does not apply here: {fallback.judged.reason}",
                       _not_applicable_remedy(env, fallback.manifest.requires))
    tier = "Triton (JIT, compiled for this GPU)" if env.version("triton") else \
        "eager PyTorch (triton is not installed)"
    return Finding("serving tier", "info", f"sglang-shims' fallback kernels would serve"
                   f" sgl_kernel: {tier}; because {why}")


def _not_applicable_remedy(env: Environment, gates: tuple[Gate, ...]) -> str:
    """What to install when the fallback's gates fail: the first missing piece, else a kernel."""
    for gate in gates:
        if env.first_installed(gate.dists)[1] is None:
            what = ("sglang itself (there is nothing to serve without it)"
                    if gate.dists[0] == "sglang" else gate.dists[0])
            return f"install {what}: pip install '{gate.dists[0]}{gate.spec}'"
    return "install a kernel built for this torch and GPU (the version your sglang pins)"


def doctor(probe_import: bool = True, announce: Callable[[str], None] | None = None,
           model_path: str | None = None) -> tuple[list[Finding], dict[str, Any]]:
    """The environment's findings, one per acting patch, and the serving tier; never raises
    for a failing check (see :func:`~sglang_shims.cli.doctor.diagnose`).  With
    ``model_path``, also the sgl_kernel ops that model reaches (``model_ops``)."""
    env = Environment()
    findings = diagnose(env, probe_import=probe_import, announce=announce)
    if model_path is not None:
        from .model_ops import check_model

        findings.extend(check_model(model_path))
    result = survey(env)
    for view in result.views:
        state = view.judged.state
        if state == "would-apply":
            findings.append(Finding(f"patch {view.manifest.id}", "info",
                                    f"would apply: {view.manifest.summary}"))
        elif state == "drifted":
            findings.append(Finding(
                f"patch {view.manifest.id}", "warn", view.judged.reason,
                f"the installed {view.manifest.target} changed; update sglang-shims, or"
                f" `sglang-shims explain {view.manifest.id}`"))
    findings.append(serving_tier(findings, env, result))
    for warning in result.warnings():
        findings.append(Finding("toggles", "warn", warning,
                                "fix the variable; `sglang-shims list` shows the known ids"))
    data = {"findings": [f.__dict__ for f in findings],
            "patches": [v.as_dict() for v in result.views]}
    return findings, data
