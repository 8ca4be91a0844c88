"""JSON the CLI did not write (reports, a model's ``config.json``): read within a size and a
depth, every way a file can be bad one :class:`BadJSON` line, never a ``RecursionError``."""

from __future__ import annotations

import pytest

from sglang_shims.cli.jsonfile import MAX_DEPTH, BadJSON, loads


def test_a_document_is_read_from_bytes_or_text() -> None:
    assert loads(b'{"a": [1, {"b": "x"}]}', max_bytes=100) == {"a": [1, {"b": "x"}]}
    assert loads('["\\u00e9"]', max_bytes=100) == ["\u00e9"]


def test_the_size_is_checked_first() -> None:
    assert loads(b"[1]", max_bytes=3) == [1]
    with pytest.raises(BadJSON, match=r"^larger than 1,000 bytes \(1,003\)$"):
        loads(b"[" + b"1" * 1001 + b"]", max_bytes=1000)


def test_bytes_that_are_not_utf8() -> None:
    with pytest.raises(BadJSON, match=r"^not UTF-8 text \(byte 2\)$"):
        loads(b'["\xff"]', max_bytes=100)


def test_the_depth_is_counted_without_recursion() -> None:
    assert MAX_DEPTH == 64
    assert loads("[" * 64 + "]" * 64, max_bytes=1000) == loads("[" * 64 + "]" * 64,
                                                                max_bytes=1000, max_depth=64)
    with pytest.raises(BadJSON, match=r"^nested 65 levels deep \(at most 64 are read\)$"):
        loads("[" * 65 + "]" * 65, max_bytes=1000)
    assert loads("1", max_bytes=10, max_depth=0) == 1
    # closed brackets count down: three lists side by side are two levels
    assert loads('{"a": [[], [], {}]}', max_bytes=100, max_depth=3) == {"a": [[], [], {}]}
    with pytest.raises(BadJSON, match=r"^nested 4 levels deep \(at most 3 are read\)$"):
        loads("[[], [[[]]]]", max_bytes=100, max_depth=3)  # the deepest after a closed one
    # brackets inside strings, escaped quotes too, are no nesting
    assert loads('["[[[{{", "\\"[[["]', max_bytes=100, max_depth=1) == ["[[[{{", '"[[[']


def test_a_stack_too_small_for_the_depth_allowed_is_still_one_line() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    with pytest.raises(BadJSON, match=r"^nested too deeply to read \(100000 levels\)$"):
        loads(deep, max_bytes=10**6, max_depth=10**6)


def test_text_that_is_not_json() -> None:
    with pytest.raises(BadJSON, match=r"^not JSON \(Expecting") as caught:
        loads("{", max_bytes=10)
    assert isinstance(caught.value, ValueError) and caught.value.__cause__ is None
