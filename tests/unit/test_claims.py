"""Claims: one place (object, attribute) is changed by one patch at a time, and undo gives
the place back, so a patch applied after a revert is not refused."""

from __future__ import annotations

import types

import pytest

from sglang_shims._errors import ConflictError
from sglang_shims.catalog.validate import load_text
from sglang_shims.engine import journal
from sglang_shims.engine.journal import PatchContext

from ..support.packages import manifest_text

PROVIDE = '[[provide]]\nname = "f"\nexported_by = "x"\nremedy = "y"\n'
FIRST = load_text(manifest_text("claims-first", "claims_mod", extra=PROVIDE), "t")
SECOND = load_text(manifest_text("claims-second", "claims_mod", extra=PROVIDE), "t")


def test_undo_releases_the_place_for_another_patch() -> None:
    module = types.ModuleType("claims_mod")
    module.x = 1  # type: ignore[attr-defined]
    claims: dict[tuple[int, str], str] = {}
    first = PatchContext(FIRST, module, None, claims)
    first.setattr(module, "x", 2)
    second = PatchContext(SECOND, module, None, claims)
    with pytest.raises(ConflictError, match="already changed by patch 'claims-first'"):
        second.setattr(module, "x", 3)
    assert module.x == 2  # type: ignore[attr-defined]
    assert journal.undo(first) == []
    assert claims == {} and module.x == 1  # type: ignore[attr-defined]
    second.setattr(module, "x", 3)
    assert module.x == 3 and claims == {(id(module), "x"): "claims-second"}  # type: ignore[attr-defined]


def test_a_patch_may_change_its_own_place_twice() -> None:
    module = types.ModuleType("claims_mod")
    module.x = 1  # type: ignore[attr-defined]
    ctx = PatchContext(FIRST, module, None, {})
    ctx.setattr(module, "x", 2)
    ctx.setattr(module, "x", 3)
    assert journal.undo(ctx) == [] and module.x == 1  # type: ignore[attr-defined]
