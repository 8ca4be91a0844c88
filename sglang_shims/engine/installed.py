"""Installed versions as ``importlib.metadata.version`` answers them, at a fraction of its cost.

Why: judging the catalog asks for the version of a dozen distributions in every sglang
process.  ``importlib.metadata`` answers each by parsing the whole ``METADATA`` file with
the email parser, and, the first time, by indexing every ``sys.path`` folder; in an
environment with torch and sglang's dependencies that was 2-3.5 ms of each wake-up.  Here
``sys.path`` is listed once (again only if it changes) into the same index
``importlib.metadata`` builds (a folder's ``*.dist-info`` and ``*.egg-info`` entries under
their normalised project name, folders in ``sys.path`` order, entries in listing order),
and only the ``Version`` header of the first match is read.

Where the answer could differ, ``importlib.metadata`` itself is asked: a ``sys.path`` entry
that is a file (a zip), an ``.egg`` in a folder, or a finder on ``sys.meta_path`` other than
the path finder that can list distributions (an import hook with metadata of its own).
"""

from __future__ import annotations

import os
import re
import sys
from importlib.machinery import PathFinder

_index: tuple[tuple[object, ...], dict[str, list[tuple[str, str]]] | None] | None = None
_SEPARATORS = re.compile(r"[-_.]+")


def normalise(name: str) -> str:
    """The key ``importlib.metadata`` files a project under (``Prepared.normalize``)."""
    low = name.lower()
    if "-" in low or "." in low or "__" in low:
        return _SEPARATORS.sub("_", low)
    return low  # most folder names are already in this form: no regular expression


def version(dist: str) -> str | None:
    """``importlib.metadata.version(dist)``, or None where that raises
    ``PackageNotFoundError``."""
    folders = metadata_folders()
    if folders is None:
        return _asked(dist)
    found = folders.get(normalise(dist))
    if not found:
        return None
    value = header_version(os.path.join(*found[0]))
    # A value over several lines: importlib.metadata re-indents it; never in a real
    # METADATA, so rather than copy that, ask it.
    return _asked(dist) if value is FOLDED else value


def metadata_folders() -> dict[str, list[tuple[str, str]]] | None:
    """{normalised project: its metadata entries (folder, name) in search order} for the
    current ``sys.path``; None where ``importlib.metadata`` must answer instead."""
    global _index
    key = tuple(sys.path)
    if _index is None or _index[0] != key:
        _index = (key, _listed(key))
    return _index[1]


def _listed(path: tuple[object, ...]) -> dict[str, list[tuple[str, str]]] | None:
    if any(finder is not PathFinder and hasattr(finder, "find_distributions")
           for finder in sys.meta_path):
        return None
    found: dict[str, list[tuple[str, str]]] = {}
    for entry in path:
        if not isinstance(entry, str):
            return None
        folder = entry or "."
        try:
            names = os.listdir(folder)
        except NotADirectoryError:
            return None  # a zip: importlib.metadata reads it through zipfile
        except OSError:
            continue  # missing or unreadable: importlib.metadata finds nothing there either
        for name in names:
            if "." not in name:
                continue  # a package or a plain file: most of a site-packages
            low = name.lower()
            if low.endswith(".egg"):
                return None
            if low.endswith((".dist-info", ".egg-info")):
                project = low.rpartition(".")[0].partition("-")[0]
                found.setdefault(normalise(project), []).append((folder, name))
    return found


FOLDED = "\n(folded)"
"""What :func:`header_version` answers for a ``Version`` header continued on further lines."""


def header_version(entry: str) -> str | None:
    """The ``Version`` header of a ``.dist-info``/``.egg-info`` entry, read as
    ``importlib.metadata`` reads it: ``METADATA``, else ``PKG-INFO``, else the entry itself
    (an ``.egg-info`` file); the first header of that name, leading blanks and the line break
    dropped (:data:`FOLDED` if it goes on over more lines).  Only the headers are read (a
    long description follows them: 40 kB for some)."""
    for leaf in ("METADATA", "PKG-INFO", ""):
        path = os.path.join(entry, leaf) if leaf else entry
        try:
            with open(path, encoding="utf-8") as handle:
                headers = []
                for line in handle:
                    if not line.strip():
                        break
                    headers.append(line)
        except (OSError, UnicodeDecodeError):
            continue
        if headers:  # an empty file counts as none, as it does for importlib.metadata
            for i, line in enumerate(headers):
                name, colon, value = line.partition(":")
                if colon and not line[:1].isspace() and name.strip().lower() == "version":
                    folded = i + 1 < len(headers) and headers[i + 1][:1].isspace()
                    return FOLDED if folded else value.lstrip(" \t").rstrip("\r\n")
            return None
    return None


def _asked(dist: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None
