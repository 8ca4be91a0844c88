"""``sglang-shims doctor``: the environment diagnosis plus what the patches would do.

The environment checks live in :mod:`sglang_shims.cli.doctor.checks`; this adds one
finding per patch that would act (or has drifted), the serving tier and any toggle
problems, so one command answers "is this environment sound, and what will
sglang-shims change in it?".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...engine.gates import Environment
from ..survey import survey
from . import diagnose
from .checks.patch_folders import not_loaded
from .checks.serving_tier import serving_tier
from .finding import Finding, Level


def doctor(probe_import: bool = True, announce: Callable[[str], None] | None = None,
           model_path: str | None = None) -> tuple[list[Finding], dict[str, Any]]:
    """The environment's findings, one per acting patch, and the serving tier; never raises
    for a failing check (see :func:`~sglang_shims.cli.doctor.diagnose`).  With
    ``model_path``, also the sgl_kernel ops that model reaches (``checks.model_coverage``)."""
    env = Environment()
    findings = diagnose(env, probe_import=probe_import, announce=announce)
    if model_path is not None:
        from .checks.model_coverage import check_model

        findings.extend(check_model(model_path))
    result = survey(env)
    for view in result.views:
        state = view.judged.state
        if state == "would-apply":
            findings.append(Finding(f"patch {view.manifest.id}", Level.INFO,
                                    f"would apply: {view.manifest.summary}"))
        elif state == "drifted":
            findings.append(Finding(
                f"patch {view.manifest.id}", Level.WARN, view.judged.reason,
                f"the installed {view.manifest.target} changed; update sglang-shims, or"
                f" `sglang-shims explain {view.manifest.id}`"))
    findings.extend(not_loaded(result.catalog.errors))
    findings.append(serving_tier(findings, env, result))
    for warning in result.setting_warnings():
        findings.append(Finding("toggles", Level.WARN, warning,
                                "fix the variable; `sglang-shims list` shows the known ids"))
    data = {"findings": [f.as_dict() for f in findings],
            "patches": [v.as_dict() for v in result.views],
            "not_loaded": dict(result.catalog.errors)}
    return findings, data

