"""A patch's long prose: what it changes and how its range was established.

Only people read it (``sglang-shims explain``, ``docs/patches.md``), so a built-in patch
keeps it in ``patches/<id>/README.md`` -- which GitHub shows beside the folder's files --
and not in its manifest, whose data every waking process reads from ``catalog.jsonl``.
A manifest may still carry ``changes`` and ``[range] established`` (a patch folder on
``SGLANG_SHIMS_PATH`` without a README); the README's section wins when it has text.

The README is Markdown with one ``## `` heading per section (:data:`SECTIONS`); anything
else in it -- a title, other sections, ``<!-- comments -->`` -- is left to the reader.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from pathlib import Path

    from .manifest import Manifest

README = "README.md"
SECTIONS = {"changes": "What it changes", "established": "How the range was established"}
_COMMENT = re.compile(r"<!--.*?-->", re.S)


class Prose(NamedTuple):
    changes: str
    established: str


def sections(text: str) -> dict[str, str]:
    """The known sections of a README's text, by key, each stripped (comments removed)."""
    titles = {title.lower(): key for key, title in SECTIONS.items()}
    found: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in _COMMENT.sub("", text).splitlines():
        if line.startswith("## "):
            key = titles.get(line[3:].strip().lower())
            current = found.setdefault(key, []) if key else None
        elif line.startswith("# "):
            current = None
        elif current is not None:
            current.append(line)
    return {key: "\n".join(lines).strip() for key, lines in found.items()}


def read(folder: Path | None) -> dict[str, str]:
    """The sections of ``folder/README.md``; ``{}`` when there is none."""
    if folder is None:
        return {}
    try:
        return sections((folder / README).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return {}


def of(manifest: Manifest) -> Prose:
    """What the patch changes and how its range was established: its README's sections,
    else its manifest's fields."""
    found = read(manifest.folder)
    return Prose(found.get("changes") or manifest.changes,
                 found.get("established") or manifest.range_note.strip())


def render(patch_id: str, changes: str, established: str) -> str:
    """A README holding these two sections (an empty one is left for its author)."""
    parts = [f"# {patch_id}\n"]
    for key, text in (("changes", changes), ("established", established)):
        parts.append(f"\n## {SECTIONS[key]}\n\n{text.strip()}\n" if text.strip()
                     else f"\n## {SECTIONS[key]}\n")
    return "".join(parts)
