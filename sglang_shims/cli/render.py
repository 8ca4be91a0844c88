"""Aligned plain-text tables for the CLI's human output (``--json`` is the machine form)."""

from __future__ import annotations

from collections.abc import Sequence


def render(headers: Sequence[str], rows: Sequence[Sequence[object]], max_width: int = 60) -> str:
    """Columns padded to their widest cell; long cells are cut with an ellipsis."""

    def cell(value: object) -> str:
        text = " ".join(str(value).split())
        return text if len(text) <= max_width else text[: max_width - 1] + "…"

    table = [[cell(h) for h in headers], *[[cell(v) for v in row] for row in rows]]
    widths = [max(len(r[i]) for r in table) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in table]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
