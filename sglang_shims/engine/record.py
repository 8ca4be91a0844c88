"""The per-process record of what was done and why, and its optional file.

Every patch has exactly one :class:`Record`.  ``sglang_shims.status()`` returns them
as plain dicts; with ``SGLANG_SHIMS_REPORT_DIR`` each process also writes
``<dir>/<pid>.json`` (atomically, so ``sglang-shims status`` never reads half a file).
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

STATES = ("pending", "applied", "not-applicable", "retired", "disabled", "drifted", "failed",
          "reverted")
SCHEMA = 1


@dataclass
class Record:
    id: str
    state: str
    reason: str
    summary: str = ""
    target: str = ""
    when: str = "after"
    policy: str = "optional"
    source: str = "builtin"
    late: bool = False
    changes: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    gates: list[str] = field(default_factory=list)
    proxies: dict[str, dict[str, Any]] = field(default_factory=dict)
    at: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out.pop("id")
        return out


def role() -> str:
    """A best guess at what this process is in sglang's process tree."""
    title = sys.modules.get("setproctitle")
    if title is not None:
        try:
            name = str(title.getproctitle())
            if name.startswith("sglang::"):
                return name.partition("::")[2].split()[0]
        except Exception:
            pass
    mp = sys.modules.get("multiprocessing")
    if mp is not None:
        try:
            name = str(mp.current_process().name)
            if name != "MainProcess":
                return name
        except Exception:
            pass
    return "main"


def process_info(origin: str) -> dict[str, Any]:
    return {
        "pid": os.getpid(),
        "ppid": os.getppid(),
        "role": role(),
        "origin": origin,
        "argv": sys.argv[:8],
        "python": sys.version.split()[0],
        "executable": sys.executable,
        "time": time.time(),
    }


def payload(records: dict[str, Record], origin: str, warnings: list[str]) -> dict[str, Any]:
    return {"schema": SCHEMA, "process": process_info(origin),
            "patches": {k: v.as_dict() for k, v in records.items()},
            "warnings": list(warnings)}


_resolved: dict[str, Path] = {}


def report_dir() -> Path | None:
    """``SGLANG_SHIMS_REPORT_DIR`` as an absolute path, resolved once per process.

    Why once: a relative value read again at exit, after the program changed directory,
    would split one process's reports across two folders.  The absolute path is also put
    back into the environment, so children started later write beside this process.
    """
    raw = os.environ.get("SGLANG_SHIMS_REPORT_DIR", "").strip()
    if not raw:
        return None
    if raw not in _resolved:
        absolute = Path.cwd() / raw
        _resolved[raw] = _resolved[str(absolute)] = absolute
        os.environ["SGLANG_SHIMS_REPORT_DIR"] = str(absolute)
    return _resolved[raw]


def write(directory: str | Path, data: dict[str, Any]) -> Path:
    """Write ``<directory>/<pid>.json`` atomically; create the directory if needed.

    The folder must be ours alone (made 0700 when missing; refused when it is a link,
    another user's, or writable by others) and the file is written through it without
    following links (:func:`sglang_shims._trust.write_file`): another user can neither
    redirect the write nor replace the report.
    """
    from .. import _trust

    body = json.dumps(data, indent=1, sort_keys=True).encode("utf-8")
    return _trust.write_file(Path(directory), f"{os.getpid()}.json", body)


def summary(records: dict[str, Record]) -> str:
    """One line: counts per state, with the ids for everything but pending/disabled."""
    groups: dict[str, list[str]] = {}
    for record in records.values():
        groups.setdefault(record.state, []).append(record.id)
    parts = []
    for state in STATES:
        ids = groups.get(state)
        if not ids:
            continue
        if state in ("pending", "disabled", "not-applicable"):
            parts.append(f"{len(ids)} {state}")
        else:
            parts.append(f"{len(ids)} {state} ({', '.join(sorted(ids))})")
    return "patches: " + ("; ".join(parts) if parts else "none")
