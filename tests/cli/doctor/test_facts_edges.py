"""Small readers of doctor's facts at their edges: pins behind extras that name each other out
of order, the DeepGEMM an unpinned sglang calls, one-number versions, absent versions, and
the value types that are frozen (hashable, shared between findings)."""

from __future__ import annotations

import dataclasses

import pytest

from sglang_shims.cli.doctor.deep_gemm_facts import DeepGemm, expected_build
from sglang_shims.cli.doctor.requires import Pin, sglang_pins
from sglang_shims.cli.doctor.version_text import minor_of, version_between


def test_extras_that_pull_each_other_in_are_followed_in_any_order() -> None:
    """``sglang[srt]`` pulls ``sglang[a]``, which pulls ``sglang[b]``, listed the other way
    round: the pin under ``b`` is still one ``pip install sglang[srt]`` installs."""
    lines = ['foo==1.0; extra == "b"', 'sglang[b]; extra == "a"', 'sglang[a]; extra == "srt"',
             'bar==2.0; extra == "other"']
    pins = {p.dist: p.default for p in sglang_pins(lines, None)}
    assert pins == {"foo": True, "bar": False}


def test_an_unpinned_sglang_calls_the_deep_gemm_of_the_installed_kernel() -> None:
    assert expected_build(["numpy"], ("sgl-kernel", "0.3.21")) == (
        "kernel", "the copy bundled with sgl-kernel==0.3.21",
        "pip install --force-reinstall --no-deps 'sgl-kernel==0.3.21'")
    assert expected_build(["numpy"], None) is None
    pinned = expected_build(['sgl-kernel==0.3.5; extra == "srt"'], ("sgl-kernel", "0.3.21"))
    assert pinned is not None and pinned[1] == "the copy bundled with sgl-kernel==0.3.5"


def test_version_readers_at_their_edges() -> None:
    assert minor_of("2") == (2, 0) and minor_of("2.9.1+cu130") == (2, 9)
    assert minor_of(None) is None
    assert version_between("", "0.1", "9") is False and version_between(None, "0.1", "9") is False
    assert version_between("0.5", "0.1", "9") is True


@pytest.mark.parametrize("value", [Pin("foo", "==1", "", True), DeepGemm("/x")])
def test_fact_values_are_frozen(value: object) -> None:
    field = dataclasses.fields(value)[0].name  # type: ignore[arg-type]
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(value, field, "changed")
    assert hash(value) == hash(value)
