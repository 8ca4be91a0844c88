"""alloc-conf-env-mirror: the two allocator variables after `import sglang`, per torch version.

Each case runs in a fresh interpreter with a minimal ``sglang`` package and a ``torch``
distribution that exists only as metadata (``torch-<version>.dist-info``): the gate
reads distribution metadata, never imports torch.  The fake ``sglang/__init__.py``
records what its body saw, to show that the patch acts before the package body (and
so before any torch allocator could read the variables).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ..support.packages import write_package
from ..support.programs import program
from ..support.run import run_python

PATCH = "alloc-conf-env-mirror"
NEW, OLD = "PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF"

SGLANG_INIT = f"""
import os
SEEN = {{name: os.environ.get(name) for name in ({NEW!r}, {OLD!r})}}
"""

CODE = program("patches/alloc_conf_env_mirror")


def run(tmp_path: Path, torch: str, env: dict[str, str]) -> dict[str, Any]:
    root = write_package(tmp_path / "pkgs", {
        "sglang/__init__.py": SGLANG_INIT,
        f"torch-{torch}.dist-info/METADATA":
            f"Metadata-Version: 2.1\nName: torch\nVersion: {torch}\n",
    })
    result = run_python(CODE, paths=(root,), env=env)
    assert result.returncode == 0, result.stderr
    data = result.json()
    assert isinstance(data, dict)
    return data


@pytest.fixture(autouse=True)
def _no_inherited_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(NEW, raising=False)
    monkeypatch.delenv(OLD, raising=False)


VALUE = "expandable_segments:True"


@pytest.mark.parametrize("torch", ["2.9.0", "2.9.1", "2.9.1+cu128"])
@pytest.mark.parametrize(("given", "copied"), [(NEW, OLD), (OLD, NEW)])
def test_one_set_is_copied_before_sglang_runs(tmp_path: Path, torch: str, given: str,
                                              copied: str) -> None:
    data = run(tmp_path, torch, {given: VALUE})
    assert data["state"] == "applied"
    assert f"torch {torch} in >=2.9" in data["reason"]
    assert data["env"] == {NEW: VALUE, OLD: VALUE}
    assert data["seen"] == {NEW: VALUE, OLD: VALUE}  # the package body already saw both
    assert data["child"] == [VALUE, VALUE]  # processes sglang starts inherit both
    assert data["changes"] == [f"setitem os.environ[{copied!r}]"]
    assert f"{copied} set from {given}={VALUE!r}" in data["notes"][0]


def test_empty_counts_as_unset(tmp_path: Path) -> None:
    data = run(tmp_path, "2.9.1", {NEW: "  ", OLD: "max_split_size_mb:128"})
    assert data["env"] == {NEW: "max_split_size_mb:128", OLD: "max_split_size_mb:128"}


def test_both_equal_nothing_to_do(tmp_path: Path) -> None:
    data = run(tmp_path, "2.9.1", {NEW: VALUE, OLD: VALUE})
    assert data["state"] == "applied" and data["changes"] == []
    assert data["env"] == {NEW: VALUE, OLD: VALUE}
    assert data["notes"] == [f"{NEW} and {OLD} are both set to {VALUE!r}; nothing to do"]


def test_conflict_is_reported_not_resolved(tmp_path: Path) -> None:
    other = "expandable_segments:False,max_split_size_mb:64"
    result = run_python(CODE, paths=(write_package(tmp_path / "pkgs", {
        "sglang/__init__.py": SGLANG_INIT,
        "torch-2.9.1.dist-info/METADATA": "Metadata-Version: 2.1\nName: torch\nVersion: 2.9.1\n",
    }),), env={NEW: VALUE, OLD: other})
    assert result.returncode == 0, result.stderr
    data = result.json()
    assert isinstance(data, dict)
    assert data["env"] == {NEW: VALUE, OLD: other} and data["changes"] == []
    (note,) = data["notes"]
    assert note.startswith(f"WARNING: {NEW}={VALUE!r} and {OLD}={other!r} differ.")
    assert f"torch 2.9's CUDA caching allocator uses only {OLD}" in note
    assert "Set only one of them, or both to the same value" in note
    assert note in result.stderr  # also logged as a warning, once
    assert result.stderr.count("differ.") == 1


def test_neither_set(tmp_path: Path) -> None:
    data = run(tmp_path, "2.9.1", {})
    assert data["env"] == {NEW: None, OLD: None} and data["changes"] == []
    assert data["notes"] == [f"neither {NEW} nor {OLD} is set; nothing to mirror"]


@pytest.mark.parametrize(("torch", "state", "why"), [
    ("2.8.0", "not-applicable", "torch 2.8.0 not in >=2.9"),
    ("2.10.0", "retired", "falls back to PYTORCH_ALLOC_CONF itself"),
    ("2.14.1", "retired", "torch 2.14.1 in >=2.10"),
])
def test_other_torch_versions_untouched(tmp_path: Path, torch: str, state: str,
                                        why: str) -> None:
    data = run(tmp_path, torch, {NEW: VALUE})
    assert data["state"] == state and why in data["reason"]
    assert data["env"] == {NEW: VALUE, OLD: None}


@pytest.mark.parametrize("env", [{"SGLANG_SHIMS": "0"}, {"SGLANG_SHIMS_DISABLE": PATCH}])
def test_toggles(tmp_path: Path, env: dict[str, str]) -> None:
    root = write_package(tmp_path / "pkgs", {
        "sglang/__init__.py": SGLANG_INIT,
        "torch-2.9.1.dist-info/METADATA": "Metadata-Version: 2.1\nName: torch\nVersion: 2.9.1\n",
    })
    code = f"import json, os, sglang; print(json.dumps(os.environ.get({OLD!r})))"
    result = run_python(code, paths=(root,), env={NEW: VALUE, **env})
    assert result.returncode == 0, result.stderr
    assert result.json() is None
