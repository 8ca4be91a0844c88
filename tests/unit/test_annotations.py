"""keep_as_class_attributes: which annotations become ClassVar, and that dataclass() then
accepts a transformers-4-style class it rejected before."""

from __future__ import annotations

import dataclasses
import typing

import pytest

from sglang_shims.patching import keep_as_class_attributes


def make() -> type:
    class Config:
        model_type: str = "x"            # hashable default: a normal field
        vision_config: dict              # bare: no class-level value
        sub_configs: dict = {"a": 1}     # unhashable value  # noqa: RUF012
        already: typing.ClassVar[int] = 3
        kept: typing.ClassVar[dict] = {"c": 3}  # a ClassVar already, unhashable or not
        plain: typing.ClassVar = {"d": 4}

    return Config


def test_both_kinds_are_kept_out_of_the_fields() -> None:
    with pytest.raises((TypeError, ValueError)):
        dataclasses.dataclass(make())
    cls = make()
    assert keep_as_class_attributes(cls, unhashable=True, bare=True) == [
        "vision_config", "sub_configs"]
    done = dataclasses.dataclass(cls)
    assert [f.name for f in dataclasses.fields(done)] == ["model_type"]
    assert done.sub_configs == {"a": 1} and not hasattr(done, "vision_config")
    assert done.already == 3
    assert cls.__annotations__["sub_configs"] is typing.ClassVar  # a string hint: bare
    assert cls.__annotations__["kept"] == "typing.ClassVar[dict]"


def test_each_kind_only_when_asked() -> None:
    assert keep_as_class_attributes(make(), unhashable=True) == ["sub_configs"]
    assert keep_as_class_attributes(make(), unhashable=False, bare=True) == ["vision_config"]
    assert keep_as_class_attributes(make(), unhashable=False) == []


def test_string_annotations_and_classes_without_any() -> None:
    ns: dict[str, object] = {}
    exec("from __future__ import annotations\n"
         "class C:\n    a: int = 1\n    b: list[int]\n", ns)
    cls = ns["C"]
    assert isinstance(cls, type)
    assert keep_as_class_attributes(cls, bare=True) == ["b"]
    assert cls.__annotations__["b"] is typing.ClassVar
    assert keep_as_class_attributes(type("Plain", (), {})) == []


def test_evaluated_annotations() -> None:
    """Annotations that are objects (no ``from __future__ import annotations``): a ClassVar,
    bare or of a type, is left; another hint becomes ``ClassVar[hint]``, or a bare ClassVar
    where it cannot be one."""
    ns: dict[str, object] = {}
    source = ("import typing\n"
              "class C:\n    a: dict = {'x': 1}\n    b: typing.ClassVar = {'y': 2}\n"
              "    c: typing.ClassVar[dict] = {'z': 3}\n    d: typing.Final = []\n")
    exec(compile(source, "<c>", "exec", dont_inherit=True), ns)  # not this module's future
    cls = ns["C"]
    assert isinstance(cls, type)
    assert keep_as_class_attributes(cls) == ["a", "d"]
    assert cls.__annotations__["a"] == typing.ClassVar[dict]
    assert cls.__annotations__["d"] is typing.ClassVar  # ClassVar[Final] is no type
