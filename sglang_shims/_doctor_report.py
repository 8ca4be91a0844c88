"""``sglang-shims doctor``: the environment diagnosis plus what the patches would do.

The environment checks live in :mod:`_doctor`; this adds one finding per patch that
would act (or has drifted) and any toggle problems, so one command answers "is this
environment sound, and what will sglang-shims change in it?".
"""

from __future__ import annotations

from typing import Any

from ._doctor import Finding, diagnose
from ._gates import Environment
from ._static import survey


def doctor(probe_import: bool = True) -> tuple[list[Finding], dict[str, Any]]:
    env = Environment()
    findings = diagnose(env, probe_import=probe_import)
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
    for warning in result.warnings():
        findings.append(Finding("toggles", "warn", warning,
                                "fix the variable; `sglang-shims list` shows the known ids"))
    data = {"findings": [f.__dict__ for f in findings],
            "patches": [v.as_dict() for v in result.views]}
    return findings, data
