"""Plain-text output for people: tables and findings that fit the terminal, colour on a TTY.

``--json`` is the machine form; everything here is for eyes.  Two rules: nothing that
says what to do is ever cut (long text is wrapped, not truncated), and colour appears
only where it cannot end up as escape codes in a file or a pipe (pytest's
``should_do_markup`` rules: ``NO_COLOR`` wins, then ``FORCE_COLOR``, then a TTY whose
``TERM`` is not ``dumb``).
"""

from __future__ import annotations

import os
import re
import shutil
import textwrap
from collections.abc import Collection, Sequence
from typing import TextIO

DEFAULT_WIDTH = 100
MIN_FLEX = 12
"""A wrapped or trimmed column never gets narrower than this."""
GAP = "  "

_SGR = {"red": "31", "yellow": "33", "green": "32", "bold": "1", "dim": "2"}
LEVEL_COLOUR = {"fail": "red", "warn": "yellow", "ok": "green", "info": "dim"}
STATE_COLOUR = {"drifted": "red", "failed": "red", "would-apply": "green", "applied": "green"}


def terminal_width() -> int:
    """Columns of the terminal (``COLUMNS`` wins, as in ``shutil``), at least 40."""
    return max(40, shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns)


def should_colour(stream: TextIO) -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty()) and os.environ.get("TERM") != "dumb"


class Style:
    """Applies colour, or does nothing: decided once per command from the output stream."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def __call__(self, text: str, colour: str | None) -> str:
        if not self.enabled or colour is None or not text:
            return text
        return f"\x1b[{_SGR[colour]}m{text}\x1b[0m"


PLAIN = Style(False)


_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
"""Characters a terminal acts on instead of showing: C0/C1 controls (escape sequences
start with one) and the bidirectional overrides that reorder what a line seems to say."""


def visible(text: str) -> str:
    """``text`` with every character a terminal would act on shown as its escape
    (``\\x1b``, ``\\u202e``): manifests and reports are written by others."""
    return _UNSAFE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def _one_line(value: object) -> str:
    return visible(" ".join(str(value).split()))


def _trim(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(1, width - 1)] + "…"


def table(headers: Sequence[str], rows: Sequence[Sequence[object]], *, width: int | None = None,
          wrap: Collection[int] = (), trim: Collection[int] = (),
          style: Style = PLAIN, colours: Sequence[dict[str, str]] | None = None) -> str:
    """Columns padded to their widest cell, the whole table within ``width``.

    Columns listed in ``wrap`` (by index) are wrapped onto more lines and those in
    ``trim`` cut with an ellipsis when the table is too wide; the widest of them
    gives way first.  Every other column (ids, states) is printed whole.
    ``colours[i]`` maps a cell value of column ``i`` to a colour.
    """
    width = terminal_width() if width is None else width
    cells = [[_one_line(h) for h in headers], *[[_one_line(v) for v in row] for row in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    flexible = [i for i in range(len(headers)) if i in wrap or i in trim]
    while sum(widths) + len(GAP) * (len(widths) - 1) > width:
        shrinkable = [i for i in flexible if widths[i] > MIN_FLEX]
        if not shrinkable:
            break
        widest = max(shrinkable, key=lambda i: widths[i])
        widths[widest] -= 1

    def lines_of(i: int, text: str) -> list[str]:
        if i in wrap and len(text) > widths[i]:
            return textwrap.wrap(text, widths[i], break_on_hyphens=False) or [""]
        return [_trim(text, widths[i]) if i in trim else text]

    out: list[str] = []
    for n, row in enumerate(cells):
        parts = [lines_of(i, text) for i, text in enumerate(row)]
        for k in range(max(len(p) for p in parts)):
            shown = []
            for i, part in enumerate(parts):
                text = part[k] if k < len(part) else ""
                pad = text.ljust(widths[i]) if i < len(parts) - 1 else text
                colour = colours[i].get(text) if colours and n and i < len(colours) else None
                shown.append(style(text, colour) + pad[len(text):])
            out.append(GAP.join(shown).rstrip())
        if n == 0:
            out.append(GAP.join("-" * w for w in widths))
    return "\n".join(out)


def render(headers: Sequence[str], rows: Sequence[Sequence[object]], max_width: int = 60) -> str:
    """A table whose cells are cut at ``max_width`` (kept for tables with short cells)."""
    return table(headers, [[_trim(_one_line(v), max_width) for v in row] for row in rows],
                 width=10**6)


def block(label: str, title: str, paragraphs: Sequence[tuple[str, str]], *,
          width: int | None = None, style: Style = PLAIN, colour: str | None = None) -> str:
    """One finding as ruff and pytest print diagnostics::

        FAIL  sgl-kernel-abi
              sgl-kernel 0.3.18 was built against torch 2.8.0; torch 2.14.1 is ...
              fix: pip install 'torch==2.8.0' ...

    ``paragraphs`` are (prefix, text) pairs, each wrapped to the width, never cut.
    """
    width = terminal_width() if width is None else width
    indent = " " * 6
    head = style(label.ljust(4), colour) + "  " + title
    out = [head.rstrip()]
    for prefix, text in paragraphs:
        if not text:
            continue
        out += textwrap.wrap(prefix + _one_line(text), max(20, width - len(indent)),
                             initial_indent=indent, subsequent_indent=indent + " " * len(prefix),
                             break_on_hyphens=False, break_long_words=False)
    return "\n".join(out)


def paragraph(text: str, *, indent: str = "  ", width: int | None = None) -> list[str]:
    """Free text wrapped to the terminal, each line indented."""
    width = terminal_width() if width is None else width
    return textwrap.wrap(_one_line(text), max(20, width - len(indent)), initial_indent=indent,
                         subsequent_indent=indent, break_on_hyphens=False,
                         break_long_words=False) or [indent.rstrip()]
