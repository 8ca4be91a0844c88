"""The per-process record of what was done and why, and its optional file.

Every patch has exactly one :class:`Record`.  ``sglang_shims.status()`` returns them
as plain dicts; with ``SGLANG_SHIMS_REPORT_DIR`` each process also writes
``<dir>/<pid>.json`` (atomically, so ``sglang-shims status`` never reads half a file).
"""

from __future__ import annotations

import enum
import os
import sys
import time
from pathlib import Path
from typing import Any


class State(str, enum.Enum):
    """A patch's state in this process.  A ``str``: compares equal to its value, and the
    report and ``status()`` carry the plain string (``Record.as_dict``)."""

    PENDING = "pending"
    APPLIED = "applied"
    NOT_APPLICABLE = "not-applicable"
    RETIRED = "retired"
    DISABLED = "disabled"
    DRIFTED = "drifted"
    FAILED = "failed"
    REVERTED = "reverted"
    STALE = "stale"  # applied, but the target was imported again since: it is stock
    BYPASSED = "bypassed"  # the target was imported without our loader: the patch did not act

    def __str__(self) -> str:
        return self.value


SCHEMA = 1


class Record:
    """One patch's record.  ``state`` is a :class:`State` (assigning a plain string
    converts it); ``details`` is what the patch reported beyond notes (``ctx.details``:
    e.g. per-op kernel providers); ``judge_ms`` the time spent judging it (gates, retire
    rule, fingerprints), not applying it.

    A plain class, not a dataclass: creating a dataclass costs about half a millisecond
    at every wake-up, for methods the engine does not need.
    """

    FIELDS = ("id", "state", "reason", "summary", "target", "when", "policy", "source", "late",
              "changes", "notes", "gates", "proxies", "details", "at", "judge_ms")
    # ``state`` is a property over ``_state``: every other field is a plain slot, assigned
    # at C speed (a waking engine makes one record per patch)
    __slots__ = tuple(f if f != "state" else "_state" for f in FIELDS)
    _state: State
    id: str
    reason: str
    summary: str
    target: str
    when: str
    policy: str
    source: str
    late: bool
    changes: list[str]
    notes: list[str]
    gates: list[str]
    proxies: dict[str, dict[str, Any]]
    details: dict[str, Any]
    at: float
    judge_ms: float

    def __init__(self, id: str, state: State, reason: str, summary: str = "", target: str = "",
                 when: str = "after", policy: str = "optional", source: str = "builtin",
                 late: bool = False, changes: list[str] | None = None,
                 notes: list[str] | None = None, gates: list[str] | None = None,
                 proxies: dict[str, dict[str, Any]] | None = None,
                 details: dict[str, Any] | None = None, at: float = 0.0,
                 judge_ms: float = 0.0) -> None:
        self.id, self.state, self.reason, self.summary = id, state, reason, summary
        self.target, self.when, self.policy, self.source = target, when, policy, source
        self.late, self.at, self.judge_ms = late, at, judge_ms
        self.changes = [] if changes is None else changes
        self.notes = [] if notes is None else notes
        self.gates = [] if gates is None else gates
        self.proxies = {} if proxies is None else proxies
        self.details = {} if details is None else details

    @property
    def state(self) -> State:
        return self._state

    @state.setter
    def state(self, value: State | str) -> None:
        # every assignment of a state, literal or member, ends as a State
        self._state = State(value)

    def __repr__(self) -> str:
        return f"Record({', '.join(f'{f}={getattr(self, f)!r}' for f in self.FIELDS)})"

    def replace(self, **changes: Any) -> Record:
        """A copy with some fields changed (the record itself stays as the engine made it)."""
        values = {f: getattr(self, f) for f in self.FIELDS}
        values.update(changes)
        return Record(**values)

    def as_dict(self) -> dict[str, Any]:
        """Every field but ``id``, as plain data the caller may change (a deep copy)."""
        import copy

        out = {f: copy.deepcopy(getattr(self, f)) for f in self.FIELDS if f != "id"}
        out["state"] = self.state.value
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


HELPERS = {
    "from multiprocessing.resource_tracker import main": "multiprocessing resource tracker",
    "from multiprocessing.semaphore_tracker import main": "multiprocessing semaphore tracker",
    "from multiprocessing.forkserver import main": "multiprocessing fork server",
}
"""How multiprocessing starts its helper processes (``python -c CODE``) -> what they are."""

FORK: dict[str, int | bool] = {}
"""In a fork child: ``parent`` (its pid at fork) and ``inherited`` (the report is the
parent's state as copied at fork, written by the at-fork hook, not by the child since)."""


def helper() -> str:
    """What multiprocessing helper this process is, or "" for a real process.

    The resource tracker and the fork server are interpreters multiprocessing starts with
    ``-c``; they run no sglang code, so ``sglang-shims status`` lists them apart and does
    not count them.  A child forked *from* the fork server is a real process.
    """
    if FORK:
        return ""
    argv = getattr(sys, "orig_argv", [])
    code = argv[argv.index("-c") + 1] if "-c" in argv[:-1] else ""
    what = next((what for start, what in HELPERS.items() if code.lstrip().startswith(start)),
                "")
    if what and _started_by_multiprocessing():
        # a worker the fork server forked before any patch ran in the server: it keeps the
        # server's command line, but multiprocessing has made it a process of its own
        return ""
    return what


def _started_by_multiprocessing() -> bool:
    """Whether multiprocessing runs this process as one of its ``Process`` objects (a pool
    worker), as opposed to the helper it starts itself (``MainProcess`` there)."""
    process = sys.modules.get("multiprocessing.process")
    if process is None:
        return False
    try:
        return bool(process.current_process().name != "MainProcess")
    except Exception:
        return False


def note_fork(parent: int, inherited: bool) -> None:
    FORK.update(parent=parent, inherited=inherited)


ARGV_KEPT = 8
"""How much of ``sys.argv`` a report keeps: the program and its first arguments tell the
processes of a run apart (``-m sglang.launch_server --model-path ...``); the whole line can
be long (sglang takes dozens of options, JSON among them) and is written at every change."""


def process_info(origin: str) -> dict[str, Any]:
    info: dict[str, Any] = {
        "pid": os.getpid(),
        "ppid": os.getppid(),
        "role": role(),
        "origin": origin,
        "argv": sys.argv[:ARGV_KEPT],
        "python": sys.version.split()[0],
        "executable": sys.executable,
        "time": time.time(),
    }
    kind = helper()
    if kind:
        info["helper"] = kind
    if FORK:
        info["forked_from"], info["inherited"] = FORK["parent"], FORK["inherited"]
    return info


def payload(records: dict[str, Record], origin: str, warnings: list[str],
            timing: dict[str, float] | None = None) -> dict[str, Any]:
    """The report's content; ``timing``: ``wake_ms`` (first watched import to the engine
    ready, every patch's toggles decided) and ``judge_ms`` (all judgements so far), wall
    time, with ``wake_cpu_ms`` and ``judge_cpu_ms``, the importing thread's CPU time for
    the same spans (steadier than wall time on a loaded machine)."""
    return {"schema": SCHEMA, "process": process_info(origin),
            "patches": {k: v.as_dict() for k, v in records.items()},
            "warnings": list(warnings), "timing": dict(timing or {})}


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
        if not Path(raw).is_absolute():
            os.environ["SGLANG_SHIMS_REPORT_DIR"] = str(absolute)
    return _resolved[raw]


def write(directory: str | Path, data: dict[str, Any]) -> Path:
    """Write ``<directory>/<pid>.json`` atomically; create the directory if needed.

    The folder must be ours alone (made 0700 when missing; refused when it is a link,
    another user's, or writable by others) and the file is written through it without
    following links (:func:`sglang_shims._trust.write_file`): another user can neither
    redirect the write nor replace the report.
    """
    import json

    from .. import _trust

    body = json.dumps(data, indent=1, sort_keys=True).encode("utf-8")
    return _trust.write_file(Path(directory), f"{os.getpid()}.json", body)


def summary(records: dict[str, Record]) -> str:
    """One line: counts per state, with the ids for everything but pending/disabled."""
    groups: dict[State, list[str]] = {}
    for record in records.values():
        groups.setdefault(record.state, []).append(record.id)
    parts = []
    for state in State:
        ids = groups.get(state)
        if not ids:
            continue
        if state in (State.PENDING, State.DISABLED, State.NOT_APPLICABLE):
            parts.append(f"{len(ids)} {state}")
        else:
            parts.append(f"{len(ids)} {state} ({', '.join(sorted(ids))})")
    return "patches: " + ("; ".join(parts) if parts else "none")
