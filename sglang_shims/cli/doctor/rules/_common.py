"""What every rule module shares: the :class:`Rule` type, and the two questions a rule
asks about sglang-shims itself (is a patch on; what is left of a break once it acts).

Kept apart from the registry in ``rules/__init__.py`` so that a rule module imports
only this, never the list of all rules it is part of.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, replace

from ....catalog.manifest import Gate, Manifest
from ....catalog.validate import parse_gates
from ....engine.gates import check_gate
from ..facts import Facts
from ..finding import Finding, Level


@functools.cache
def manifests() -> dict[str, Manifest]:
    """The built-in patches' manifests, by id: where a rule reads a patch's gates."""
    from ....catalog.load import load

    return load().by_id()


def verdict(level: Level, detail: str, remedy: str) -> Finding:
    """What a judge returns when its combination is present: a finding that
    :meth:`Rule.evaluate` then names after the rule and cites."""
    return Finding("", level, detail, remedy)


@dataclass(frozen=True)
class Rule:
    """A known-bad combination, seen in an upstream report (``url``).

    ``judge`` is a pure function of :class:`Facts`: None when the combination is
    absent, otherwise its :func:`verdict`; the rule adds its id and the citation.

    A rule for a break that a patch fixes names the ``patch``; its version range is
    then the patch's ``[requires]``, read from the manifest (one truth: the doctor
    and the patch cannot disagree about where the break is), checked before ``judge``
    runs, and ``trigger`` is derived from it.  Where the break exists in a wider range
    than the patch acts, ``when`` holds the rule's own gates and ``wider`` says why;
    a test holds the two ranges to that relation.
    """

    id: str
    url: str
    """The public report of the break (an issue or pull request upstream)."""
    trigger: str
    judge: Callable[[Facts], Finding | None]
    patch: str | None = None
    when: tuple[tuple[str, str], ...] | None = None
    """(distribution key as in a manifest, specifier), for a range wider than the patch's."""
    wider: str = ""

    def gates(self) -> tuple[Gate, ...]:
        """The version gates the rule needs, before its judge looks any further."""
        if self.when is not None:
            return parse_gates(dict(self.when), f"doctor rule {self.id}")
        if self.patch is not None:
            return manifests()[self.patch].requires
        return ()

    def describe(self) -> str:
        """When the rule fires, in words: derived from the gates where it has them."""
        gates = " with ".join(f"{g.label} {g.spec or 'installed'}" for g in self.gates())
        return "; ".join(part for part in (gates, self.trigger) if part)

    def evaluate(self, facts: Facts) -> Finding | None:
        if not all(check_gate(gate, facts.env)[0] for gate in self.gates()):
            return None
        found = self.judge(facts)
        if found is None:
            return None
        return replace(found, check=self.id, detail=f"{found.detail} [{self.id}: {self.url}]")


def patch_on(facts: Facts, patch_id: str) -> tuple[bool, str]:
    """Would sglang-shims apply this built-in patch, per the toggles in the environment?"""
    from ...._bootstrap import OFF_BY_DEFAULT
    from ...._toggles import Toggles

    return Toggles(dict(facts.environ)).decide(patch_id, patch_id not in OFF_BY_DEFAULT)


def unless_patched(facts: Facts, patch_id: str, unpatched: Finding, does: str) -> Finding:
    """``unpatched`` as it stands when ``patch_id`` is off or outside its gates here; a
    warning saying what the patch does when it would act (as the other tied rules do)."""
    on, why = patch_on(facts, patch_id)
    gates = manifests()[patch_id].requires
    if not on:
        return replace(unpatched,
                       detail=f"{unpatched.detail}; sglang-shims' patch {patch_id} is off ({why})",
                       remedy=f"turn the patch on (SGLANG_SHIMS_ENABLE={patch_id}); "
                              f"{unpatched.remedy}")
    if not all(check_gate(gate, facts.env)[0] for gate in gates):
        return unpatched
    return replace(unpatched, level=Level.WARN,
                   detail=f"{unpatched.detail}; sglang-shims' patch {patch_id} (on: {why}) {does}")
