"""alloc-conf-env-mirror: the two allocator variables after `import sglang`, per torch version.

Each case applies the patch in the test's own process (the ``shim_patch`` fixture) to a
minimal ``sglang`` package body, with the torch version the gate reads given to the
engine (the gate reads distribution metadata, never imports torch).  The fake body records
what it saw, to show that the patch acts before the package body (and so before any torch
allocator could read the variables).  What the patch leaves in ``os.environ`` is what
processes sglang starts inherit.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from typing import Any

import pytest

from sglang_shims.testing.inprocess import ShimPatch

from ..support.run import REPO

PATCH = "alloc-conf-env-mirror"
FOLDER = REPO / "patches" / PATCH
NEW, OLD = "PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF"

SGLANG_INIT = f"""
import os
SEEN = {{name: os.environ.get(name) for name in ({NEW!r}, {OLD!r})}}
"""


@pytest.fixture(autouse=True)
def _no_inherited_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(NEW, raising=False)
    monkeypatch.delenv(OLD, raising=False)


@pytest.fixture
def warned() -> Iterator[list[str]]:
    """What the patch logs (its own logger, ``sglang_shims.patch.<id>``)."""
    lines: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: lines.append(record.getMessage())  # type: ignore[method-assign]
    logger = logging.getLogger(f"sglang_shims.patch.{PATCH}")
    logger.addHandler(handler)
    yield lines
    logger.removeHandler(handler)


def run(shim_patch: ShimPatch, monkeypatch: pytest.MonkeyPatch, torch: str,
        env: dict[str, str], **toggles: str) -> dict[str, Any]:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    record = shim_patch(FOLDER, SGLANG_INIT, versions={"torch": torch}, environ=toggles)
    assert shim_patch.module is not None
    return {"env": {n: os.environ.get(n) for n in (NEW, OLD)}, "seen": shim_patch.module.SEEN,
            "state": record.state, "reason": record.reason, "changes": record.changes,
            "notes": record.notes}


VALUE = "expandable_segments:True"


@pytest.mark.parametrize("torch", ["2.9.0", "2.9.1", "2.9.1+cu128"])
@pytest.mark.parametrize(("given", "copied"), [(NEW, OLD), (OLD, NEW)])
def test_one_set_is_copied_before_sglang_runs(shim_patch: ShimPatch,
                                              monkeypatch: pytest.MonkeyPatch, torch: str,
                                              given: str, copied: str) -> None:
    data = run(shim_patch, monkeypatch, torch, {given: VALUE})
    assert data["state"] == "applied"
    assert f"torch {torch} in >=2.9" in data["reason"]
    assert data["env"] == {NEW: VALUE, OLD: VALUE}  # what processes sglang starts inherit
    assert data["seen"] == {NEW: VALUE, OLD: VALUE}  # the package body already saw both
    assert data["changes"] == [f"setitem os.environ[{copied!r}]"]
    assert f"{copied} set from {given}={VALUE!r}" in data["notes"][0]


def test_empty_counts_as_unset(shim_patch: ShimPatch, monkeypatch: pytest.MonkeyPatch) -> None:
    data = run(shim_patch, monkeypatch, "2.9.1", {NEW: "  ", OLD: "max_split_size_mb:128"})
    assert data["env"] == {NEW: "max_split_size_mb:128", OLD: "max_split_size_mb:128"}


def test_both_equal_nothing_to_do(shim_patch: ShimPatch,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    data = run(shim_patch, monkeypatch, "2.9.1", {NEW: VALUE, OLD: VALUE})
    assert data["state"] == "applied" and data["changes"] == []
    assert data["env"] == {NEW: VALUE, OLD: VALUE}
    assert data["notes"] == [f"{NEW} and {OLD} are both set to {VALUE!r}; nothing to do"]


def test_conflict_is_reported_not_resolved(shim_patch: ShimPatch,
                                           monkeypatch: pytest.MonkeyPatch,
                                           warned: list[str]) -> None:
    other = "expandable_segments:False,max_split_size_mb:64"
    data = run(shim_patch, monkeypatch, "2.9.1", {NEW: VALUE, OLD: other})
    assert data["env"] == {NEW: VALUE, OLD: other} and data["changes"] == []
    (note,) = data["notes"]
    assert note.startswith(f"WARNING: {NEW}={VALUE!r} and {OLD}={other!r} differ.")
    assert f"torch 2.9's CUDA caching allocator uses only {OLD}" in note
    assert "Set only one of them, or both to the same value" in note
    assert warned == [note]  # also logged as a warning, once


def test_neither_set(shim_patch: ShimPatch, monkeypatch: pytest.MonkeyPatch) -> None:
    data = run(shim_patch, monkeypatch, "2.9.1", {})
    assert data["env"] == {NEW: None, OLD: None} and data["changes"] == []
    assert data["notes"] == [f"neither {NEW} nor {OLD} is set; nothing to mirror"]


@pytest.mark.parametrize(("torch", "state", "why"), [
    ("2.8.0", "not-applicable", "torch 2.8.0 not in >=2.9"),
    ("2.10.0", "retired", "falls back to PYTORCH_ALLOC_CONF itself"),
    ("2.14.1", "retired", "torch 2.14.1 in >=2.10"),
])
def test_other_torch_versions_untouched(shim_patch: ShimPatch,
                                        monkeypatch: pytest.MonkeyPatch, torch: str,
                                        state: str, why: str) -> None:
    data = run(shim_patch, monkeypatch, torch, {NEW: VALUE})
    assert data["state"] == state and why in data["reason"]
    assert data["env"] == {NEW: VALUE, OLD: None}


@pytest.mark.parametrize("toggles", [{"SGLANG_SHIMS": "0"}, {"SGLANG_SHIMS_DISABLE": PATCH}])
def test_toggles(shim_patch: ShimPatch, monkeypatch: pytest.MonkeyPatch,
                 toggles: dict[str, str]) -> None:
    data = run(shim_patch, monkeypatch, "2.9.1", {NEW: VALUE}, **toggles)
    assert data["state"] == "disabled"
    assert data["env"] == {NEW: VALUE, OLD: None}


def test_undone_after_the_test(shim_patch: ShimPatch, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the fixture gives back: the patch reverted, the variable it set gone."""
    run(shim_patch, monkeypatch, "2.9.1", {NEW: VALUE})
    assert os.environ.get(OLD) == VALUE
    assert shim_patch.engine is not None
    assert shim_patch.engine.revert() == []
    assert os.environ.get(OLD) is None
