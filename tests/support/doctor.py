"""Hermetic machines for the doctor's checks and rules: only what a test gives exists."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import sglang_shims.cli.doctor.rules  # noqa: F401  (reached as doctor.rules)
from sglang_shims.cli import doctor
from sglang_shims.cli.doctor import Facts, Finding
from sglang_shims.engine.gates import Environment


def hermetic(versions: Mapping[str, str | None] | None = None,
             caps: list[tuple[int, int]] | None = None) -> Environment:
    return Environment(versions=dict(versions or {}), capabilities=caps, hermetic=True)


def facts(versions: Mapping[str, str | None] | None = None, *,
          caps: list[tuple[int, int]] | None = None, **fields: Any) -> Facts:
    """Facts of a hypothetical machine: only what is given exists."""
    env = hermetic(versions, caps if caps is not None else [])
    return Facts(env=env, **fields)


def by_check(findings: list[Finding], check: str) -> list[Finding]:
    """The findings of one check."""
    return [f for f in findings if f.check == check]


def rule(rule_id: str) -> doctor.rules.Rule:
    return next(r for r in doctor.rules.RULES if r.id == rule_id)


def verdict(rule_id: str, f: Facts) -> Finding | None:
    return rule(rule_id).evaluate(f)
