"""Version helpers for the doctor's checks, on top of packaging's :class:`Version`.

The doctor reads versions from metadata, labels (``2.9.1+cu130``) and file names;
an unparseable one is treated as unknown (None / False), never as an error: a
check about torch must not fail because some other distribution has an odd version.
"""

from __future__ import annotations

import re

from packaging.version import InvalidVersion, Version

from ...engine.gates import satisfies


def _version(text: str | None) -> Version | None:
    if not text:
        return None
    try:
        return Version(text)
    except InvalidVersion:
        return None


def release_of(text: str | None) -> tuple[int, ...] | None:
    """The release numbers of a PEP 440 version (``2.9.1+cu130`` -> (2, 9, 1))."""
    parsed = _version(text)
    return parsed.release if parsed is not None else None


def public_version(text: str) -> str:
    """The version without its local label: ``0.6.16+cu130`` -> ``0.6.16``."""
    parsed = _version(text)
    return parsed.public if parsed is not None else text.split("+", 1)[0]


def local_label(text: str | None) -> str | None:
    """The local label, lower-cased: ``2.9.1+cu130`` -> ``cu130``; None without one."""
    parsed = _version(text)
    return parsed.local if parsed is not None else None


def minor_of(text: str | None) -> tuple[int, int] | None:
    release = release_of(text)
    if release is None:
        return None
    return release[0], release[1] if len(release) > 1 else 0


def version_in(text: str | None, spec: str) -> bool:
    """Is an installed version inside ``spec``?  False when absent or unparseable."""
    return bool(text) and satisfies(str(text), spec)[0]


def version_between(text: str | None, first: str, last: str) -> bool:
    return version_in(text, f">={first},<={last}") if text else False


def sm_name(cap: tuple[int, int]) -> str:
    return f"sm_{cap[0]}{cap[1]}"


def cuda_from_label(label: str | None) -> str | None:
    """``cu130`` -> ``13.0``, ``cu128`` -> ``12.8``; None for anything else."""
    match = re.fullmatch(r"cu(\d+)(\d)", label or "")
    return f"{match.group(1)}.{match.group(2)}" if match else None
