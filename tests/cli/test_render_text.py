"""What the CLI prints for people never lets a file's text drive the terminal."""

from __future__ import annotations

import os

import pytest

from sglang_shims.cli.render import block, paragraph, table, terminal_width, visible


@pytest.mark.parametrize(("raw", "shown"), [
    ("\x1b[31mred", "\\x1b[31mred"),
    ("title\x1b]0;owned\x07", "title\\x1b]0;owned\\x07"),
    ("abc\u202edcba", "abc\\u202edcba"),
    ("\x9b2J", "\\x9b2J"),
    ("plain ünïcödé — ok", "plain ünïcödé — ok"),
])
def test_control_characters_are_shown_not_obeyed(raw: str, shown: str) -> None:
    assert visible(raw) == shown
    assert shown in table(["h"], [[raw]], width=200)
    assert shown in block("WARN", "check", [("", raw)], width=200)
    assert shown in "\n".join(paragraph(raw, width=200))


def test_the_width_is_columns_else_the_terminals_else_100_and_at_least_40(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def no_terminal(*args: object) -> os.terminal_size:
        raise OSError("not a terminal")

    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.setattr(os, "get_terminal_size", no_terminal)
    assert terminal_width() == 100
    monkeypatch.setenv("COLUMNS", "120")
    assert terminal_width() == 120
    monkeypatch.setenv("COLUMNS", "20")
    assert terminal_width() == 40
