"""Reading JSON that someone else wrote: bounded in size and depth, one clear error.

Why: the CLI reads JSON it did not write itself (the per-process reports of a run, a
downloaded model's ``config.json``).  ``json.loads`` recurses once per nesting level, so a
file of a few kilobytes of ``[[[[...`` raises ``RecursionError`` (not ``ValueError``) and
a command that meant to say "this file is bad" dies instead; a huge file is read whole.
Here the size is checked first, the nesting is counted by a regular-expression scan that
skips strings (no recursion), and every way a file can be bad becomes :class:`BadJSON`,
a ``ValueError`` whose message fits on one line.
"""

from __future__ import annotations

import json
import re
from typing import Any

MAX_DEPTH = 64
"""Deeper than any report or model config we read (reports nest about 6 levels)."""

_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')
"""A JSON string (skipped whole, escapes included) or one bracket."""


class BadJSON(ValueError):
    """A file that is not the JSON we can read; the message says why, in one line."""


def _depth(text: str) -> int:
    deepest = level = 0
    for match in _TOKENS.finditer(text):
        token = match.group()
        if token in "[{":
            level += 1
            deepest = max(deepest, level)
        elif token in "]}":
            level -= 1
    return deepest


def loads(data: bytes | str, *, max_bytes: int, max_depth: int = MAX_DEPTH) -> Any:
    """The JSON document in ``data``; :class:`BadJSON` when it is larger than
    ``max_bytes``, nested deeper than ``max_depth``, not UTF-8 or not JSON."""
    if len(data) > max_bytes:
        raise BadJSON(f"larger than {max_bytes:,} bytes ({len(data):,})")
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
    except UnicodeDecodeError as exc:
        raise BadJSON(f"not UTF-8 text (byte {exc.start})") from None
    depth = _depth(text)
    if depth > max_depth:
        raise BadJSON(f"nested {depth} levels deep (at most {max_depth} are read)")
    try:
        return json.loads(text)
    except RecursionError:  # a stack smaller than max_depth needs: still one line
        raise BadJSON(f"nested too deeply to read ({depth} levels)") from None
    except ValueError as exc:
        raise BadJSON(f"not JSON ({exc})") from None
