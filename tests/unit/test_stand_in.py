"""A patch with ``when = "instead"`` stands in for its whole target module, and only when the
real one cannot serve: ``unusable()`` gives a reason, the real import raises, or the user
forces it.  Otherwise the real module is what the program gets.  Each case imports the
target through a real engine in the test's own process (:mod:`tests.support.engine`)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable

import pytest

from sglang_shims.testing.inprocess import code_module

from ..support.engine import Seam, logged

PATCH = "stand-in-demo"

CODE = """
import os

calls = 0

def unusable(ctx):
    if os.environ.get("DEMO_UNUSABLE") == "raise":
        raise RuntimeError("probe broke")
    if os.environ.get("DEMO_UNUSABLE") == "interrupt":
        raise KeyboardInterrupt
    return os.environ.get("DEMO_UNUSABLE") or None

def provide(ctx):
    global calls
    if os.environ.get("DEMO_PROVIDE") == "raise":
        raise RuntimeError("cannot build")
    if os.environ.get("DEMO_PROVIDE") == "interrupt":
        raise KeyboardInterrupt
    calls += 1
    ctx.module.VALUE = 42
    ctx.module.CAUSE = ctx.cause  # why the real module cannot serve, for the stand-in's errors
"""


@pytest.fixture
def run(seam: Seam, monkeypatch: pytest.MonkeyPatch
        ) -> Callable[..., dict[str, object]]:
    """``run(body="VALUE = 1\\n", **environ)``: import ``sitarget`` through an engine with
    the stand-in patch; what the program got, and the patch's state and reason.
    ``DEMO_*`` settings go to the patch code, the others to the toggles."""
    seam.patch(PATCH, "sitarget", CODE, when="instead")

    def imported(body: str = "VALUE = 1\n", **environ: str) -> dict[str, object]:
        for key in ("DEMO_UNUSABLE", "DEMO_PROVIDE"):
            if key in environ:
                monkeypatch.setenv(key, environ.pop(key))
        engine = seam.engine(environ)
        try:
            sitarget = seam.imported(engine, "sitarget", body)
            value: object = [sitarget.VALUE, getattr(sitarget, "CAUSE", None)]
        except ImportError as exc:
            value = f"{type(exc).__name__}: {exc}"
        entry = seam.status(engine, PATCH)
        return {"value": value, "state": entry["state"], "reason": entry["reason"]}

    return imported


def test_real_module_serves_when_usable(run: Callable[..., dict[str, object]]) -> None:
    data = run()
    assert data["value"] == [1, None]
    assert data["state"] == "not-applicable"
    assert data["reason"] == "the installed sitarget imported and can serve here"


def test_stands_in_when_unusable(run: Callable[..., dict[str, object]]) -> None:
    data = run(DEMO_UNUSABLE="no code for this GPU")
    assert data["value"] == [42, "no code for this GPU"] and data["state"] == "applied"
    assert "no code for this GPU" in str(data["reason"])


def test_stands_in_when_the_real_import_fails(run: Callable[..., dict[str, object]]) -> None:
    data = run('raise ImportError("libfoo.so: cannot open")\n')
    value = data["value"]
    assert isinstance(value, list) and value[0] == 42 and data["state"] == "applied"
    assert "importing sitarget failed: ImportError: libfoo.so: cannot open" in str(
        data["reason"])


def test_forced_by_enable_stands_in_over_a_working_module(
        run: Callable[..., dict[str, object]]) -> None:
    data = run(SGLANG_SHIMS_ENABLE=PATCH)
    value = data["value"]
    assert isinstance(value, list) and value[0] == 42 and data["state"] == "applied"
    assert "forced by SGLANG_SHIMS_ENABLE" in str(data["reason"])


def test_unusable_raising_keeps_the_real_module(run: Callable[..., dict[str, object]]) -> None:
    data = run(DEMO_UNUSABLE="raise")
    assert data["value"] == [1, None] and data["state"] == "failed"
    assert "unusable() raised RuntimeError: probe broke" in str(data["reason"])


@pytest.mark.parametrize("strict", [{}, {"SGLANG_SHIMS_STRICT": "1"}], ids=["normal", "strict"])
def test_provide_raising_fails_the_import_by_name(run: Callable[..., dict[str, object]],
                                                  strict: dict[str, str]) -> None:
    data = run(DEMO_UNUSABLE="broken", DEMO_PROVIDE="raise", **strict)
    assert data["state"] == "failed"
    assert "provide() raised RuntimeError: cannot build" in str(data["reason"])
    assert "could not stand in for sitarget" in str(data["value"])
    assert json.dumps(data)  # a plain, reportable outcome


def test_disabled_stand_in_never_stands_in(run: Callable[..., dict[str, object]]) -> None:
    data = run(DEMO_UNUSABLE="broken", SGLANG_SHIMS_DISABLE=PATCH)
    assert data["value"] == [1, None] and data["state"] == "disabled"


def test_strict_mode_with_nothing_wrong_imports_normally(
        run: Callable[..., dict[str, object]]) -> None:
    data = run(SGLANG_SHIMS_STRICT="1")
    assert data["value"] == [1, None] and data["state"] == "not-applicable"


def test_a_stand_in_is_built_once_per_process(seam: Seam,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A patch applies once per process: importing the target again (after it was dropped
    from sys.modules) does not build a second stand-in, and the record no longer says
    "applied" about a module that is not the one in use."""
    seam.patch(PATCH, "sitarget", CODE, when="instead")
    monkeypatch.setenv("DEMO_UNUSABLE", "no code for this GPU")
    engine = seam.engine()
    seam.imported(engine, "sitarget")
    del sys.modules["sitarget"]
    seam.imported(engine, "sitarget")
    assert getattr(code_module(PATCH), "calls", None) == 1
    # the module now in sys.modules is not the stand-in: status must not claim it applied
    assert seam.status(engine, PATCH)["state"] != "applied"


def test_revert_undoes_a_stand_in(seam: Seam, monkeypatch: pytest.MonkeyPatch) -> None:
    """``revert()`` undoes every applied patch, a stand-in included, and its record says so
    (a stand-in left "applied" after revert() would be status claiming code in effect that
    the user asked to undo)."""
    seam.patch(PATCH, "sitarget", CODE, when="instead")
    monkeypatch.setenv("DEMO_UNUSABLE", "no code for this GPU")
    engine = seam.engine()
    before = seam.imported(engine, "sitarget").VALUE
    errors = engine.revert()
    assert [before, errors, seam.status(engine, PATCH)["state"]] == [42, [], "reverted"]


@pytest.mark.parametrize(("setting", "during"), [
    ("DEMO_UNUSABLE", "deciding whether sitarget can serve"),
    ("DEMO_PROVIDE", "standing in for sitarget")])
def test_ctrl_c_in_the_patch_is_recorded_and_passed_on(seam: Seam,
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      setting: str, during: str) -> None:
    """Ctrl-C while ``unusable()`` or ``provide()`` runs stops the import (the program was
    asked to stop), and the record says which patch was running, and where."""
    seam.patch(PATCH, "sitarget", CODE, when="instead")
    monkeypatch.setenv("DEMO_UNUSABLE", "no code for this GPU")
    monkeypatch.setenv(setting, "interrupt")
    engine = seam.engine()
    with pytest.raises(KeyboardInterrupt):
        seam.imported(engine, "sitarget")
    entry = seam.status(engine, PATCH)
    assert entry["state"] == "failed"
    assert entry["reason"].startswith(f"interrupted by KeyboardInterrupt while {during} (")
    assert not entry["reason"].endswith("rolled back")


def test_a_failed_import_leaves_nothing_of_its_own_in_the_stand_in(seam: Seam) -> None:
    """The real body bound names and imported a submodule before it raised: the stand-in
    starts from a clean module, and the half-imported submodule is dropped too."""
    seam.patch(PATCH, "sitarget", CODE, when="instead")
    engine = seam.engine()
    sys.modules["sitarget.half"] = sys.modules[__name__]  # what the failed body imported
    stand_in = seam.imported(engine, "sitarget",
                             'PARTIAL = 1\nraise ImportError("libfoo.so: cannot open")\n')
    assert stand_in.VALUE == 42 and not hasattr(stand_in, "PARTIAL")
    assert "sitarget.half" not in sys.modules


def test_a_failing_provide_logs_its_traceback_at_debug(seam: Seam,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    seam.patch(PATCH, "sitarget", CODE, when="instead")
    monkeypatch.setenv("DEMO_UNUSABLE", "no code for this GPU")
    monkeypatch.setenv("DEMO_PROVIDE", "raise")
    engine = seam.engine()
    with pytest.raises(ImportError):
        seam.imported(engine, "sitarget")
    (line,) = [line for line in logged(engine) if f"{PATCH} failed:" in line]
    assert line.startswith(f"DEBUG {PATCH} failed:")
    assert "Traceback (most recent call last)" in line and "RuntimeError: cannot build" in line
