"""The public names of ``sglang_shims`` and ``sglang_shims.engine``: each found where it lives
on first use (neither package imports anything at module level), an unknown name an
``AttributeError`` that names it."""

from __future__ import annotations

import importlib.metadata
import sys

import pytest

import sglang_shims
from sglang_shims import engine, patching
from sglang_shims.engine import core, process


def test_install_status_and_revert_are_the_engines(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    monkeypatch.setattr(process, "install", lambda how: calls.append(how) or "installed")
    monkeypatch.setattr(process, "status", lambda: {"p": {"state": "applied"}})
    monkeypatch.setattr(process, "revert", lambda: ["an error"])
    assert sglang_shims.install() == "installed" and calls == ["install"]  # type: ignore[func-returns-value]
    assert sglang_shims.status() == {"p": {"state": "applied"}}
    assert sglang_shims.revert() == ["an error"]


def test_version_is_the_distributions_or_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", missing)
    assert sglang_shims.__version__ == "0+unknown"
    monkeypatch.setattr(importlib.metadata, "version",
                        lambda name: "1.2.3" if name == "sglang-shims" else "?")
    assert sglang_shims.__version__ == "1.2.3"


def test_patch_authors_names() -> None:
    assert sglang_shims.PatchContext is patching.PatchContext
    assert sglang_shims.Retired is patching.Retired


def test_a_module_loaded_without_the_import_system_is_found(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The ``.pth`` line loads the bootstrap by path: ``sys.modules`` has it, the package's
    namespace does not."""
    from sglang_shims import _toggles

    monkeypatch.delattr(sglang_shims, "_toggles")
    assert sys.modules["sglang_shims._toggles"] is _toggles
    assert sglang_shims._toggles is _toggles


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match=r"^module 'sglang_shims' has no attribute 'nope'$"):
        sglang_shims.nope  # type: ignore[attr-defined]  # noqa: B018
    with pytest.raises(AttributeError,
                       match=r"^module 'sglang_shims\.engine' has no attribute 'nope'$"):
        engine.nope  # type: ignore[attr-defined]  # noqa: B018


def test_the_engines_names_live_in_its_modules() -> None:
    assert engine.Engine is core.Engine
    assert (engine.get, engine.install, engine.status, engine.revert) == (
        process.get, process.install, process.status, process.revert)
