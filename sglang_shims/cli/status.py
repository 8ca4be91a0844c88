"""Aggregate the per-process reports of one run: did every process get every patch?

Each process writes ``<dir>/<pid>.json`` (see :mod:`_report`).  For each patch the
summary says "applied in 3/3 processes" or lists the processes that differ and why;
a failed or drifted patch anywhere, or processes that disagree, is a problem.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._bootstrap import env
from . import render as _table

LAUNCH_ROOT = Path(tempfile.gettempdir()) / "sglang-shims"


def resolve_dir(explicit: str | None) -> Path | None:
    """The report directory: the argument, else $SGLANG_SHIMS_REPORT_DIR, else the
    newest launch directory under the system temp dir."""
    if explicit:
        return Path(explicit)
    from_env = env("SGLANG_SHIMS_REPORT_DIR")
    if from_env:
        return Path(from_env)
    if not LAUNCH_ROOT.is_dir():
        return None
    runs = sorted((p for p in LAUNCH_ROOT.iterdir() if p.is_dir()),
                  key=lambda p: p.stat().st_mtime)
    return runs[-1] if runs else None


@dataclass
class Summary:
    directory: Path
    processes: list[dict[str, Any]] = field(default_factory=list)
    patches: dict[str, dict[str, list[dict[str, Any]]]] = field(default_factory=dict)
    """patch id -> state -> [{pid, role, reason}]"""
    unreadable: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def verdict(self, patch_id: str) -> str:
        states = self.patches[patch_id]
        total = sum(len(v) for v in states.values())
        if len(states) == 1:
            (state,) = states
            return f"{state} in {total}/{total} processes"
        parts = [f"{state} in {len(procs)}/{total}" for state, procs in sorted(states.items())]
        return "; ".join(parts)

    def as_dict(self) -> dict[str, Any]:
        return {"directory": str(self.directory), "processes": self.processes,
                "patches": {pid: {"verdict": self.verdict(pid), "states": states}
                            for pid, states in sorted(self.patches.items())},
                "unreadable": self.unreadable, "problems": self.problems}

    def text(self) -> str:
        if not self.processes:
            return f"no process reports in {self.directory}"
        procs = _table.render(
            ["pid", "ppid", "role", "origin", "applied", "argv"],
            [(p["pid"], p["ppid"], p["role"], p["origin"], p["applied"], " ".join(p["argv"]))
             for p in self.processes])
        rows = []
        for patch_id in sorted(self.patches):
            states = self.patches[patch_id]
            detail = "" if len(states) == 1 else "; ".join(
                f"{proc['role']} (pid {proc['pid']}): {state}, {proc['reason']}"
                for state, members in sorted(states.items()) if state != "applied"
                for proc in members)
            rows.append((patch_id, self.verdict(patch_id), detail or "-"))
        out = [f"reports: {self.directory} ({len(self.processes)} processes)", "", procs, "",
               _table.render(["patch", "verdict", "processes that differ"], rows, max_width=90)]
        out += [f"problem: {p}" for p in self.problems]
        out += [f"unreadable report: {u}" for u in self.unreadable]
        return "\n".join(out)


def aggregate(directory: Path) -> Summary:
    summary = Summary(directory)
    for path in sorted(directory.glob("*.json")) if directory.is_dir() else []:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            process = data["process"]
            patches = data["patches"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            summary.unreadable.append(f"{path.name}: {exc}")
            continue
        applied = sum(1 for p in patches.values() if p.get("state") == "applied")
        summary.processes.append({**process, "applied": applied})
        for patch_id, entry in patches.items():
            state = entry.get("state", "?")
            summary.patches.setdefault(patch_id, {}).setdefault(state, []).append(
                {"pid": process.get("pid"), "role": process.get("role"),
                 "reason": entry.get("reason", "")})
            if state in ("failed", "drifted"):
                summary.problems.append(
                    f"{patch_id} {state} in pid {process.get('pid')}: {entry.get('reason')}")
    summary.processes.sort(key=lambda p: (p.get("time", 0), p.get("pid", 0)))
    for patch_id, states in summary.patches.items():
        acted = {s for s in states if s in ("applied", "retired", "not-applicable", "drifted",
                                            "failed")}
        if len(acted) > 1:
            summary.problems.append(f"{patch_id}: processes disagree ({summary.verdict(patch_id)})")
    return summary
