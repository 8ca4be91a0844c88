"""Two journal details no other test pinned (found by mutation testing): change labels name
classes by their qualified name, and a snapshot sees a dict value replaced under its key."""

from __future__ import annotations

import types

from sglang_shims.catalog.manifest import load_text
from sglang_shims.engine.journal import PatchContext, restore, snapshot

from .conftest import manifest_text

MANIFEST = load_text(manifest_text("details-demo", "details_mod", extra=(
    '[[provide]]\nname = "f"\nexported_by = "x"\nremedy = "y"\n')), "t")


class Outer:
    class Inner:
        value = 1


def test_change_labels_name_modules_and_classes() -> None:
    module = types.ModuleType("details_mod")
    module.value = 1  # type: ignore[attr-defined]
    ctx = PatchContext(MANIFEST, module, {})
    ctx.setattr(module, "value", 2)
    ctx.setattr(Outer.Inner, "value", 2)
    assert ctx.changes == ["setattr details_mod.value", "setattr Outer.Inner.value"]
    assert ctx.undo() == []
    assert Outer.Inner.value == 1 and module.value == 1  # type: ignore[attr-defined]


def test_dict_value_replaced_in_place_is_restored() -> None:
    """Same keys, same length, one value swapped: identity of keys alone is not enough."""
    module = types.ModuleType("details_mod")
    first, second = object(), object()
    module.TABLE = {"a": first, "b": 2}  # type: ignore[attr-defined]
    before = snapshot(module)
    module.TABLE["a"] = second  # type: ignore[attr-defined]
    fixed = restore(module, before)
    table = module.TABLE  # type: ignore[attr-defined]
    assert table["a"] is first and table["b"] == 2 and len(table) == 2
    assert any("TABLE" in line for line in fixed), fixed


def test_list_contents_checked_by_identity() -> None:
    """An untouched list differs in nothing; one element swapped in place is put back."""
    module = types.ModuleType("details_mod")
    first, second = object(), object()
    module.ITEMS = [first, 2]  # type: ignore[attr-defined]
    before = snapshot(module)
    assert restore(module, before) == []
    module.ITEMS[0] = second  # type: ignore[attr-defined]
    fixed = restore(module, before)
    assert module.ITEMS[0] is first and any("ITEMS" in line for line in fixed), fixed  # type: ignore[attr-defined]
