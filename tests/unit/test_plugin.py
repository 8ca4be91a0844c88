"""sglang's plugin route (``_plugin.load``): it activates the shims, lets a refusal that must
stop sglang through, and turns any other failure into one line on stderr.

``tests/test_activation.py`` runs the entry point for real in a fresh venv; here each of the
three outcomes is pinned in this process, with ``install`` replaced.
"""

from __future__ import annotations

import pytest

from sglang_shims import _plugin, engine
from sglang_shims._errors import ShimImportError


def test_load_installs_as_the_plugin(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    monkeypatch.setattr(engine, "install", calls.append)
    _plugin.load()
    assert calls == ["plugin"]


def test_a_required_patchs_failure_stops_sglang(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(how: str) -> None:
        raise ShimImportError("patch 'x' is required")

    monkeypatch.setattr(engine, "install", refuse)
    with pytest.raises(ShimImportError, match="patch 'x' is required"):
        _plugin.load()


def test_any_other_failure_is_one_line_and_sglang_goes_on(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def broken(how: str) -> None:
        raise ValueError("bad report dir")

    monkeypatch.setattr(engine, "install", broken)
    _plugin.load()
    assert capsys.readouterr().err == (
        "sglang-shims: plugin activation failed: ValueError: bad report dir\n")
