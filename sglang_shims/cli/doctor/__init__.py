"""``sglang-shims doctor``: what is installed, what will break, and what to do about it.

sglang fails at start-up, or worse at the first kernel launch, when its pieces drift
apart: a kernel built for another torch (undefined C++ symbols), a kernel with no
image for the GPU, a CUDA runtime library that is not on the loader's path, a
transformers that silently changed a config field.  Each of these can be told in
advance from versions, from the ELF headers of the kernel libraries and from one
``import sgl_kernel`` in a child process -- without a GPU and without importing the
kernel here, so a broken install cannot take the diagnosis down with it.

The package holds the facts about the machine, gathered once (``facts``), the checks
that judge them, one module each in the order they run (``checks``), and the known-bad
combinations the ``known-bad`` check looks for, one module per topic (``rules``).
Every check is a function of the facts, so each can be tested with a hermetic
:class:`~sglang_shims.engine.gates.Environment`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from ...engine.gates import Environment
from . import checks
from .facts import Facts, gather
from .finding import Finding, Level, failed

__all__ = ["Facts", "Finding", "Level", "diagnose"]


def diagnose(env: Environment | None = None, *, probe_import: bool = True,
             use_torch: bool = True,
             announce: Callable[[str], None] | None = None) -> list[Finding]:
    """Diagnose the environment; never raises.

    ``env`` defaults to this interpreter's; a hermetic one is judged on its versions
    (and ``capabilities``) alone.  ``probe_import`` imports ``sgl_kernel`` in a child
    process (up to a minute, only when a kernel is installed); ``use_torch`` lets
    GPU detection import torch when it is installed; ``announce`` gets one line
    before a step that may take long (the probe).
    """
    try:
        facts = gather(env, use_torch=use_torch)
    except Exception as exc:
        return [failed("doctor", exc)]
    findings = [Finding("doctor", Level.WARN, f"could not read the {what}: {why}; checks that "
                        "need it are less precise") for what, why in facts.problems]
    for check_id, check in checks.ordered(probe_import, announce):
        try:
            findings.extend(check(facts))
        except Exception as exc:
            findings.append(failed(check_id, exc))
    return remedies_once(findings)


def remedies_once(findings: list[Finding]) -> list[Finding]:
    """Each remedy given once: a later check whose remedy an earlier check already gave
    (a missing kernel is both a known-bad rule and one of sglang's pins) points back to
    it, so the report does not repeat a ``pip install`` line."""
    first: dict[str, str] = {}
    out = []
    for finding in findings:
        earlier = first.setdefault(finding.remedy, finding.check) if finding.remedy else None
        repeated = earlier is not None and earlier != finding.check
        out.append(replace(finding, remedy=f"the same as for {earlier} above") if repeated
                   else finding)
    return out
