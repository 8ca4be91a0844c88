"""The journal: every change a patch makes through its context can be undone exactly."""

from __future__ import annotations

import os
import sys
import types
from typing import Any

import pytest

from sglang_shims.engine import gates, journal
from sglang_shims.engine.gates import Environment
from sglang_shims.engine.journal import PatchContext, Retired, restore, snapshot
from sglang_shims.engine.proxy import MissingSymbolError, OptionalSymbol

from ..support.packages import demo_manifest

MANIFEST = demo_manifest("journal-demo", "demo_mod")


def fresh_module() -> types.ModuleType:
    module = types.ModuleType("demo_mod")
    module.value = 1  # type: ignore[attr-defined]
    module.func = lambda x: x + 1  # type: ignore[attr-defined]
    return module


class Base:
    def method(self) -> str:
        return "base"


class Child(Base):
    @classmethod
    def make(cls) -> str:
        return cls.__name__

    @staticmethod
    def static(x: int) -> int:
        return x


def test_setattr_add_change_and_undo() -> None:
    module = fresh_module()
    before = snapshot(module)
    ctx = PatchContext(MANIFEST, module)
    ctx.setattr(module, "value", 2)
    ctx.setattr(module, "new_name", "x")
    assert module.value == 2 and module.new_name == "x"  # type: ignore[attr-defined]
    assert journal.changes(ctx) == ["setattr demo_mod.value", "setattr demo_mod.new_name"]
    assert journal.undo(ctx) == []
    assert restore(module, before) == []  # the journal alone restored everything


def test_inherited_attribute_comes_back_by_deletion() -> None:
    ctx = PatchContext(MANIFEST, fresh_module())
    ctx.setattr(Child, "method", lambda self: "patched")
    assert Child().method() == "patched"
    journal.undo(ctx)
    assert "method" not in vars(Child) and Child().method() == "base"


def test_wrap_keeps_method_kinds() -> None:
    ctx = PatchContext(MANIFEST, fresh_module())
    calls: list[str] = []

    def spy(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        calls.append(wrapped.__name__)
        return wrapped(*args, **kwargs)

    ctx.wrap(Child, "make", spy)
    ctx.wrap(Child, "static", spy)
    assert Child.make() == "Child" and Child().static(3) == 3
    assert calls == ["make", "static"]
    journal.undo(ctx)
    assert isinstance(vars(Child)["make"], classmethod)
    assert isinstance(vars(Child)["static"], staticmethod)


class GrandChild(Child):
    """Inherits ``make`` (classmethod) and ``static`` (staticmethod) from Child."""


class GreatGrandChild(GrandChild):
    pass


def test_wrap_resolves_inherited_descriptors() -> None:
    """Wrapping on a subclass takes the raw descriptor from the MRO, sets the wrapper on
    the subclass (the base keeps its own) and keeps binding right for its subclasses."""
    ctx = PatchContext(MANIFEST, fresh_module())
    seen: list[Any] = []

    def spy(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        seen.append(instance)
        return wrapped(*args, **kwargs)

    base_make, base_static = vars(Child)["make"], vars(Child)["static"]
    ctx.wrap(GrandChild, "make", spy)
    ctx.wrap(GrandChild, "static", spy)
    assert GreatGrandChild.make() == "GreatGrandChild"  # cls is the class called through
    assert GreatGrandChild().make() == "GreatGrandChild"
    assert GreatGrandChild.static(4) == 4 and GreatGrandChild().static(5) == 5
    assert seen[:2] == [GreatGrandChild, GreatGrandChild]
    assert Child.make() == "Child" and len(seen) == 4  # the base is not wrapped
    assert vars(Child)["make"] is base_make and vars(Child)["static"] is base_static
    journal.undo(ctx)
    assert "make" not in vars(GrandChild) and "static" not in vars(GrandChild)


def test_undo_runs_newest_first() -> None:
    """Two changes to one class attribute: undoing oldest-first would leave the middle
    value behind."""

    class Holder:
        x = 1

    ctx = PatchContext(MANIFEST, fresh_module())
    ctx.setattr(Holder, "x", 2)
    ctx.setattr(Holder, "x", 3)
    table = {"k": "a"}
    ctx.setitem(table, "k", "b")
    ctx.setitem(table, "k", "c")
    assert journal.undo(ctx) == []
    assert Holder.x == 1 and table == {"k": "a"}


def test_gpus_and_versions_come_from_the_engine_s_environment(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A patch asks ``ctx`` what the gates were judged by: the engine's environment, where
    the GPUs and each distribution's version are looked up once, whichever patch asks."""
    monkeypatch.setenv("SGLANG_SHIMS_GPU_CAPABILITY", "9.0,12.0")
    read: list[str] = []
    monkeypatch.setattr(gates, "_installed_version", lambda dist: read.append(dist) or "1.0")
    env = Environment({"sglang": "0.5.9"})
    first, second = (PatchContext(MANIFEST, fresh_module(), env) for _ in range(2))
    assert first.gpus() == [(9, 0), (12, 0)]
    monkeypatch.setenv("SGLANG_SHIMS_GPU_CAPABILITY", "8.0")
    assert second.gpus() == [(9, 0), (12, 0)]
    assert first.version("sglang") == second.version("SGLang") == "0.5.9"
    assert first.version("other-dist") == second.version("other_dist") == "1.0"
    assert read == ["other-dist"]
    hermetic = PatchContext(MANIFEST, fresh_module(),
                            Environment(capabilities=[(10, 0)], hermetic=True))
    assert hermetic.gpus() == [(10, 0)] and hermetic.version("sglang") is None


def test_target_missing() -> None:
    assert not PatchContext(MANIFEST, fresh_module()).target_missing
    from sglang_shims._bootstrap import Missing

    missing = fresh_module()
    missing.__loader__ = Missing("demo_mod")
    assert PatchContext(MANIFEST, missing).target_missing


def test_setitem_setenv_delattr() -> None:
    module = fresh_module()
    ctx = PatchContext(MANIFEST, module)
    table = {"a": 1}
    ctx.setitem(table, "a", 2)
    ctx.setitem(table, "b", 3)
    ctx.setenv("SGLANG_SHIMS_TEST_VAR", "1")
    ctx.delattr(module, "value")
    assert table == {"a": 2, "b": 3} and os.environ["SGLANG_SHIMS_TEST_VAR"] == "1"
    journal.undo(ctx)
    assert table == {"a": 1} and "SGLANG_SHIMS_TEST_VAR" not in os.environ
    assert module.value == 1  # type: ignore[attr-defined]


def test_rebind_only_under_prefix() -> None:
    old, new = object(), object()
    inside = types.ModuleType("rebind_pkg.mod")
    outside = types.ModuleType("other_pkg")
    inside.ref = old  # type: ignore[attr-defined]
    outside.ref = old  # type: ignore[attr-defined]
    sys.modules["rebind_pkg.mod"], sys.modules["other_pkg"] = inside, outside
    try:
        ctx = PatchContext(MANIFEST, fresh_module())
        assert ctx.rebind(old, new, "rebind_pkg") == 1
        assert inside.ref is new and outside.ref is old  # type: ignore[attr-defined]
        journal.undo(ctx)
        assert inside.ref is old  # type: ignore[attr-defined]
    finally:
        del sys.modules["rebind_pkg.mod"], sys.modules["other_pkg"]


def test_restore_catches_writes_outside_the_journal() -> None:
    module = fresh_module()
    before = snapshot(module)
    module.value = 99  # type: ignore[attr-defined]
    module.intruder = 1  # type: ignore[attr-defined]
    assert sorted(restore(module, before)) == ["removed intruder", "restored value"]
    assert module.value == 1 and not hasattr(module, "intruder")  # type: ignore[attr-defined]


class Unequal:
    """An element whose ``==`` raises, as a tensor's does: restore must not call it."""

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("ambiguous")

    __hash__ = object.__hash__


def test_restore_undoes_in_place_changes_to_containers() -> None:
    module = fresh_module()
    odd = Unequal()
    items, table, members, raw = [1, odd], {"a": odd}, {odd, "s"}, bytearray(b"ab")
    module.ITEMS, module.TABLE, module.MEMBERS, module.RAW = items, table, members, raw
    before = snapshot(module)
    assert restore(module, before) == []  # nothing changed: nothing compared by ==
    items.append(3)
    table["a"] = Unequal()
    table["b"] = 2
    members.discard(odd)
    raw[0:1] = b"z"
    assert sorted(restore(module, before)) == [
        f"restored the contents of {name}" for name in ("ITEMS", "MEMBERS", "RAW", "TABLE")]
    assert module.ITEMS is items and items == [1, odd]  # the same object, as it was
    assert module.TABLE is table and list(table) == ["a"] and table["a"] is odd
    assert members == {odd, "s"} and raw == bytearray(b"ab")


def test_retire_signal() -> None:
    ctx = PatchContext(MANIFEST, fresh_module())
    with pytest.raises(Retired, match="already fixed"):
        ctx.retire("already fixed")


class TestProxy:
    def test_identity_and_error(self) -> None:
        proxy = OptionalSymbol("sgl_kernel", "gone", "p-id", lambda: "gone is gone: install x")
        assert (proxy.__name__, proxy.__qualname__, proxy.__module__) == (
            "gone", "gone", "sgl_kernel")
        assert callable(proxy) and proxy.state == "unresolved"
        for _ in range(3):
            with pytest.raises(MissingSymbolError, match="install x"):
                proxy(1, k=2)
        assert proxy.failed_calls == 3 and proxy.state == "unavailable"
        assert "unavailable" in repr(proxy)

    def test_substitute_resolves_and_rebinds(self) -> None:
        holder = types.ModuleType("proxy_holder")
        sys.modules["proxy_holder"] = holder
        try:
            proxy = OptionalSymbol("sgl_kernel", "dumps", "p-id", lambda: "x",
                                   substitute="json:dumps")
            holder.dumps = proxy  # type: ignore[attr-defined]
            assert proxy([1]) == "[1]"
            import json

            assert holder.dumps is json.dumps  # type: ignore[attr-defined]
            assert proxy.rebound >= 1 and proxy.state == "resolved"
            assert proxy.__wrapped__ is json.dumps
        finally:
            del sys.modules["proxy_holder"]

    def test_broken_substitute_explains(self) -> None:
        proxy = OptionalSymbol("sgl_kernel", "f", "p-id", lambda: "f missing",
                               substitute="no_such_module_xyz:f")
        with pytest.raises(MissingSymbolError, match="substitute no_such_module_xyz:f failed"):
            proxy()


# -- change labels and snapshots --------------------------------------------------------

DETAILS = demo_manifest("details-demo", "details_mod")


class Outer:
    class Inner:
        value = 1


def test_change_labels_name_modules_and_classes() -> None:
    module = types.ModuleType("details_mod")
    module.value = 1  # type: ignore[attr-defined]
    ctx = PatchContext(DETAILS, module)
    ctx.setattr(module, "value", 2)
    ctx.setattr(Outer.Inner, "value", 2)
    assert journal.changes(ctx) == ["setattr details_mod.value", "setattr Outer.Inner.value"]
    assert journal.undo(ctx) == []
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
