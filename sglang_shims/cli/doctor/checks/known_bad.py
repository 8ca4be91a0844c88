"""Known-bad combinations: every rule in :data:`~sglang_shims.cli.doctor.rules.RULES`,
each citing its upstream report and giving its remedy."""

from __future__ import annotations

from .. import rules
from ..facts import Facts
from ..finding import Finding, failed


def check_rules(facts: Facts) -> list[Finding]:
    """One finding per rule that fires; a rule that raises is said as a warning of its own,
    so one broken rule does not hide the others."""
    out = []
    for rule in rules.RULES:
        try:
            finding = rule.evaluate(facts)
        except Exception as exc:
            finding = failed(rule.id, exc)
        if finding is not None:
            out.append(finding)
    return out
