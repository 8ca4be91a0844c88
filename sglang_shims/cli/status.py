"""Aggregate the per-process reports of one run: did every process get every patch?

Each process writes ``<dir>/<pid>.json`` (see :mod:`sglang_shims.engine.record`); the
launcher adds ``launch.json``, what it started or why it could not.  For each patch the
summary says "applied in 3/3 processes" or lists the processes that differ and why;
a failed or drifted patch anywhere, or processes that disagree, is a problem.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import _trust
from .._bootstrap import env
from ..launch import LAUNCH_RECORD
from . import jsonfile
from . import render as _table


def launch_root() -> Path:
    """Where the launcher puts this user's runs: ``<tmp>/sglang-shims-<uid>``."""
    return _trust.user_folder()


def resolve_dir(explicit: str | None) -> Path | None:
    """The report directory: the argument, else $SGLANG_SHIMS_REPORT_DIR, else this
    user's newest launch directory under the system temp dir.

    Only folders we own are candidates: another user's run (or a link to one) is never
    picked as "the newest".  A per-user folder made by someone else is returned as is,
    so that :func:`aggregate` refuses it with the reason instead of showing nothing.
    """
    if explicit:
        return Path(explicit)
    from_env = env("SGLANG_SHIMS_REPORT_DIR")
    if from_env:
        return Path(from_env)
    root = launch_root()
    if not os.path.lexists(root):
        return None
    try:
        _trust.check_folder(root)
    except OSError:
        return root
    runs = []
    for entry in root.iterdir():
        try:
            info = entry.lstat()
        except OSError:  # removed meanwhile
            continue
        if stat.S_ISDIR(info.st_mode) and not _trust.owner_problem(info, "", root_too=False):
            runs.append((info.st_mtime, entry))
    return max(runs)[1] if runs else None


@dataclass
class Summary:
    directory: Path
    processes: list[dict[str, Any]] = field(default_factory=list)
    patches: dict[str, dict[str, list[dict[str, Any]]]] = field(default_factory=dict)
    """patch id -> state -> [{pid, role, reason}]"""
    unreadable: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    helpers: list[dict[str, Any]] = field(default_factory=list)
    """multiprocessing's resource tracker and fork server: listed, never counted."""
    user: str = field(default_factory=_trust.whoami)
    """Whose reports these are: only files of the current user are read."""
    untested: dict[str, list[str]] = field(default_factory=dict)
    """patch id -> why it was judged on releases newer than the catalog's data (a note,
    not a problem: the patch's gates admit them, nothing has checked them yet)."""
    models: list[dict[str, Any]] = field(default_factory=list)
    """The models processes served through an applied kernel patch, with their op
    verdicts (``details["models"]``): one entry per patch, model and verdict, with the
    pids that reported it."""

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
                "helpers": self.helpers, "unreadable": self.unreadable,
                "problems": self.problems, "models": self.models,
                "untested": self.untested, "user": self.user}

    def text(self) -> str:
        if not self.processes:
            return "\n".join([f"no process reports of {self.user} in {self.directory}",
                              *self._notes()])
        procs = _table.table(  # argv is the one column that may be cut: it is long and known
            ["pid", "ppid", "role", "origin", "applied", "argv"],
            [(p["pid"], p["ppid"], label(p), p["origin"], p["applied"], " ".join(p["argv"]))
             for p in self.processes + self.helpers], trim={5})
        rows = []
        for patch_id in sorted(self.patches):
            states = self.patches[patch_id]
            detail = "" if len(states) == 1 else "; ".join(
                f"{proc['role']} (pid {proc['pid']}): {state}, {proc['reason']}"
                for state, members in sorted(states.items()) if state != "applied"
                for proc in members)
            rows.append((patch_id, self.verdict(patch_id), detail or "-"))
        helpers = f", and {len(self.helpers)} multiprocessing helpers not counted" \
            if self.helpers else ""
        out = [f"reports of {self.user}: {self.directory} ({len(self.processes)} processes"
               f"{helpers})",
               "", procs, "",
               _table.table(["patch", "verdict", "processes that differ"], rows, wrap={2})]
        untested = [f"judged on untested ground: {pid}: {'; '.join(lines)}"
                    for pid, lines in sorted(self.untested.items())]
        return "\n".join(out + [model_line(m) for m in self.models] + untested
                         + self._notes())

    def _notes(self) -> list[str]:
        return ([f"problem: {p}" for p in self.problems]
                + [f"unreadable report: {u}" for u in self.unreadable])


def model_line(model: dict[str, Any]) -> str:
    """One line per model served: who serves each op it reaches, failures first."""
    entry = model["verdict"]
    groups: dict[str, list[str]] = {}
    for op, who in entry.get("ops", {}).items():
        groups.setdefault(str(who).partition(":")[0].partition(" (")[0], []).append(op)
    failing = entry.get("would_fail") or []
    head = (f"model {model['model']} ({entry.get('architecture')}, quantization"
            f" {entry.get('quantization') or 'none'}) via {model['patch']}, pid"
            f" {', '.join(map(str, model['pids']))}: ")
    parts = [f"WOULD FAIL at call: {', '.join(failing)}"] if failing else []
    parts += [f"{who}: {', '.join(ops)}" for who, ops in groups.items() if who != "none"]
    parts += [str(u) for u in entry.get("unsupported") or []]
    return head + "; ".join(parts)


def _add_models(summary: Summary, process: dict[str, Any], patch_id: str,
                entry: dict[str, Any]) -> None:
    """Only an applied patch's verdicts: what a failed or reverted one judged is not in
    effect."""
    if entry.get("state") != "applied":
        return
    for model, verdict in (entry.get("details", {}).get("models") or {}).items():
        same = next((m for m in summary.models if m["patch"] == patch_id
                     and m["model"] == model and m["verdict"] == verdict), None)
        if same is None:
            summary.models.append({"patch": patch_id, "model": model, "verdict": verdict,
                                   "pids": [process.get("pid")]})
        else:
            same["pids"].append(process.get("pid"))


def label(process: dict[str, Any]) -> str:
    """The role column: a helper says what it is; a fork child says whose state it has."""
    if process.get("helper"):
        return f"helper: {process['helper']}"
    role = str(process.get("role"))
    if "forked_from" in process:
        how = "state inherited at fork" if process.get("inherited") else "own report"
        return f"{role} (fork of {process['forked_from']}, {how})"
    return role


MAX_REPORT_BYTES = 16 << 20
"""A report is a few kilobytes; one this large is not one of ours."""


def read_report(path: Path) -> dict[str, Any]:
    """One process report, or ValueError/OSError with a one-line reason: another user's
    file or a link (``_trust``), too large or too deep, not JSON, or not a report."""
    data = jsonfile.loads(_trust.read_file(path), max_bytes=MAX_REPORT_BYTES)
    if not isinstance(data, dict):
        raise ValueError(f"not a report (a JSON {type(data).__name__}, not an object)")
    missing = [key for key in ("process", "patches") if not isinstance(data.get(key), dict)]
    if missing:
        raise ValueError(f"not a report (no {' or '.join(map(repr, missing))} object)")
    return data


def _launch_problem(directory: Path) -> str | None:
    """Why the launcher did not start the run in ``directory``, from its record."""
    path = directory / LAUNCH_RECORD
    if not os.path.lexists(path):
        return None
    try:
        record = jsonfile.loads(_trust.read_file(path), max_bytes=1 << 20)
        failed = record.get("failed") if isinstance(record, dict) else "unreadable record"
    except (OSError, ValueError) as exc:
        return f"the launcher's record {path.name} is unreadable: {exc}"
    return f"this run never started: {failed}" if failed else None


def aggregate(directory: Path) -> Summary:
    summary = Summary(directory)
    try:
        _trust.check_folder(directory)  # ours alone, or nothing in it is read
    except FileNotFoundError:
        pass
    except OSError as exc:
        summary.problems.append(f"{directory} not read: {exc}")
        return summary
    never_started = _launch_problem(directory) if directory.is_dir() else None
    if never_started:
        summary.problems.append(never_started)
    reports = sorted(p for p in directory.glob("*.json") if p.stem.isdigit()) \
        if directory.is_dir() else []
    for path in reports:
        try:  # a link, or a file another user made, is skipped with the reason
            data = read_report(path)
        except (OSError, ValueError) as exc:
            summary.unreadable.append(f"{path.name}: {exc}")
            continue
        process, patches = data["process"], data["patches"]
        applied = sum(1 for p in patches.values()
                      if isinstance(p, dict) and p.get("state") == "applied")
        if process.get("helper"):
            summary.helpers.append({**process, "applied": applied})
            continue
        summary.processes.append({**process, "applied": applied})
        for patch_id, raw in patches.items():
            entry = raw if isinstance(raw, dict) else {"state": "?", "reason": repr(raw)}
            state = entry.get("state", "?")
            summary.patches.setdefault(patch_id, {}).setdefault(state, []).append(
                {"pid": process.get("pid"), "role": process.get("role"),
                 "reason": entry.get("reason", "")})
            _add_models(summary, process, patch_id, entry)
            for line in entry.get("untested", []) or []:
                found = summary.untested.setdefault(patch_id, [])
                if isinstance(line, str) and line not in found:
                    found.append(line)
            if state in NOT_IN_EFFECT:
                summary.problems.append(
                    f"{patch_id} {state} in pid {process.get('pid')}: {entry.get('reason')}")
    if summary.unreadable:
        summary.problems.append(f"{len(summary.unreadable)} report(s) could not be read, so"
                                " the processes that wrote them are not judged")
    if not directory.is_dir():
        summary.problems.append(f"no report directory {directory}: it does not exist")
    elif not summary.processes and not never_started:
        summary.problems.append(f"no process reports in {directory}: was the run started"
                                " with SGLANG_SHIMS_REPORT_DIR set to it, or with"
                                " `sglang-shims launch`?")
    summary.processes.sort(key=lambda p: (p.get("time", 0), p.get("pid", 0)))
    for patch_id, states in summary.patches.items():
        acted = {s for s in states if s in ("applied", "retired", "not-applicable", "drifted",
                                            "failed")}
        if len(acted) > 1:
            summary.problems.append(f"{patch_id}: processes disagree ({summary.verdict(patch_id)})")
    return summary


NOT_IN_EFFECT = ("failed", "drifted", "stale", "bypassed")
"""States whose report means the patch's code is not doing what it was meant to: each is a
problem, so ``status`` exits non-zero."""
