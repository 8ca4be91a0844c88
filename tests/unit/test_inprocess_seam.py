"""The in-process seam itself (:mod:`sglang_shims.testing.inprocess`): the loader's events in
the loader's order, internal errors said rather than raised, and nothing left behind."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from types import ModuleType

import pytest

from sglang_shims.engine import process
from sglang_shims.engine.core import Engine
from sglang_shims.testing import inprocess

from ..support.engine import Seam

SETENV = "def apply(ctx):\n    ctx.setenv('SEAM_DEMO_VAR', 'set by the patch')\n"


def test_events_go_out_in_the_loaders_order(seam: Seam) -> None:
    """before, the body, after; the module in sys.modules and marked as initialising while
    it runs, as the import system leaves it for the loader."""
    engine = seam.engine(builtin=False)
    seen: list[tuple[str, bool, bool]] = []
    real = engine.on_event

    def on_event(name: str, phase: str, module: ModuleType, exc: BaseException | None
                 ) -> str | None:
        seen.append((phase, sys.modules.get(name) is module,
                     bool(getattr(module.__spec__, "_initializing", False))))
        return real(name, phase, module, exc)

    engine.on_event = on_event  # type: ignore[method-assign]
    module = seam.imported(engine, "seamtarget", "import sys\nRAN = 'seamtarget' in sys.modules\n")
    assert seen == [("before", True, True), ("after", True, True)]
    assert module.RAN is True and module.__spec__._initializing is False
    with pytest.raises(ValueError, match="body"):
        seam.imported(engine, "seamtarget", "raise ValueError('body')\n")
    assert seen[2:] == [("before", True, True), ("error", True, True)]
    assert "seamtarget" not in sys.modules  # a failed import leaves no entry


def test_an_internal_error_is_said_and_the_import_goes_on(seam: Seam) -> None:
    engine = seam.engine(builtin=False)

    def broken(engine: Engine, module: ModuleType) -> None:
        raise RuntimeError("a bug of ours")

    engine.on_import["seamtarget"] = broken
    assert seam.imported(engine, "seamtarget").VALUE == 1
    assert inprocess.complaints(engine) == [
        "internal error while handling seamtarget (RuntimeError: a bug of ours)"]
    inprocess.complaints(engine).clear()  # read: the fixture would fail the test otherwise


def test_nothing_is_left_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SEAM_DEMO_VAR", raising=False)
    engine_before = process.current()
    isolation = inprocess.Isolation()
    seam = Seam(tmp_path, isolation)
    seam.patch("seam-demo", "seamtarget", SETENV)
    engine = seam.engine()
    seam.imported(engine, "seamtarget")
    assert os.environ["SEAM_DEMO_VAR"] == "set by the patch"
    assert inprocess.code_module("seam-demo") is not None
    assert isolation.close() == []
    assert "SEAM_DEMO_VAR" not in os.environ  # the patch was reverted
    assert "seamtarget" not in sys.modules
    assert inprocess.code_module("seam-demo") is None
    assert process.current() is engine_before  # the process's engine was never built
