"""The engine at its edges, in the test's own process, each pinned on its own: a watched
import that raises, a stale start-up table, proxies forgotten on revert, a broken patch
folder in strict mode, a provided name that exists, a retiring patch, a failing patch's
traceback, the error a missing name raises, and strict mode with a disabled patch.

The edges only a fresh interpreter shows (the process title, a namespace package or an
old-style finder on ``sys.meta_path``, ``install()`` watching again, the wake-up time) are
in ``tests/process/test_engine_edge_cases.py``.
"""

from __future__ import annotations

import sys
import types

import pytest

from sglang_shims import _bootstrap
from sglang_shims._errors import MissingSymbolError

from ..support.engine import Seam, logged

PATCH = "events-demo"
CODE = "def apply(ctx):\n    ctx.setattr(ctx.module, 'VALUE', 2)\n"
PROVIDE = '[[provide]]\nname = "{name}"\nexported_by = "evtarget 2"\nremedy = "{remedy}"\n'


def test_a_failing_target_import_is_noted_on_its_pending_patch(seam: Seam) -> None:
    seam.patch(PATCH, "evtarget", CODE)
    engine = seam.engine()
    with pytest.raises(RuntimeError, match="boom at import"):
        seam.imported(engine, "evtarget", 'raise RuntimeError("boom at import")\n')
    entry = seam.status(engine, PATCH)
    assert (entry["state"], entry["notes"]) == (
        "pending", ["importing evtarget raised RuntimeError: boom at import"])
    # then something loads it around the hook: no longer "being imported"
    sys.modules["evtarget"] = types.ModuleType("evtarget")
    assert seam.status(engine, PATCH)["state"] == "bypassed"


def test_a_stale_watch_table_is_warned_about_and_a_fresh_one_is_not(
        seam: Seam, monkeypatch: pytest.MonkeyPatch) -> None:
    assert seam.engine().warnings == []
    monkeypatch.setattr(_bootstrap, "OFF_BY_DEFAULT",
                        _bootstrap.OFF_BY_DEFAULT | {"sgl-kernel-fused-marlin-moe"})
    (warning,) = seam.engine().warnings
    assert warning.startswith("the start-up watch table does not match the built-in patches")


def test_revert_forgets_the_patchs_proxies(seam: Seam) -> None:
    seam.patch("proxy-demo", "evtarget",
               extra=PROVIDE.format(name="missing_fn", remedy="upgrade"))
    engine = seam.engine()
    evtarget = seam.imported(engine, "evtarget")
    before = sorted(seam.status(engine, "proxy-demo")["proxies"])
    engine.revert()
    entry = seam.status(engine, "proxy-demo")
    assert [before, entry["state"], entry["proxies"], hasattr(evtarget, "missing_fn")] == [
        ["evtarget.missing_fn"], "reverted", {}, False]


def test_strict_mode_reports_a_broken_patch_folder_once(seam: Seam) -> None:
    """The first watched import fails naming the broken patch; later ones go on."""
    seam.patch(PATCH, "evtarget", CODE)
    seam.patch("broken-demo", "evtarget", manifest="this is not TOML = = =\n")
    engine = seam.engine({"SGLANG_SHIMS_STRICT": "1"})
    with pytest.raises(ImportError) as first:
        seam.imported(engine, "evtarget")
    assert str(first.value).startswith(
        "sglang-shims: strict mode and a patch could not be loaded:")
    assert "broken-demo" in str(first.value)
    assert "evtarget" not in sys.modules  # the failed import left nothing behind
    assert seam.imported(engine, "evtarget").VALUE == 2


def test_a_provided_name_the_target_has_is_left_and_noted(seam: Seam) -> None:
    """``[[provide]]`` only fills a gap: a name the module already exports is kept, and the
    record says why no stand-in was put there."""
    seam.patch("provide-demo", "evtarget", extra=PROVIDE.format(name="VALUE", remedy="upgrade"))
    engine = seam.engine()
    evtarget = seam.imported(engine, "evtarget")
    entry = seam.status(engine, "provide-demo")
    assert [evtarget.VALUE, entry["state"], entry["notes"], entry["proxies"]] == [
        1, "applied", ["evtarget.VALUE exists; left as it is"], {}]


def test_a_retiring_patch_undoes_its_changes_inside_the_module(seam: Seam) -> None:
    """``ctx.retire()`` after a change: the journal undoes every change, also one on a class
    of the module (a snapshot of the module's own names would not see it)."""
    seam.patch("retire-demo", "evtarget", "def apply(ctx):\n"
               "    ctx.setattr(ctx.module.Box, 'SIZE', 5)\n    ctx.retire('fixed upstream')\n")
    engine = seam.engine()
    evtarget = seam.imported(engine, "evtarget", "class Box:\n    SIZE = 1\n")
    entry = seam.status(engine, "retire-demo")
    assert [evtarget.Box.SIZE, entry["state"], entry["reason"]] == [
        1, "retired", "fixed upstream"]


def test_a_failing_patchs_traceback_is_logged_at_debug(seam: Seam) -> None:
    """The status line says what failed; the traceback, for whoever debugs the patch, goes to
    the log at debug level (``SGLANG_SHIMS_LOG=debug``)."""
    seam.patch("fail-demo", "evtarget", "def apply(ctx):\n    raise ValueError('no such field')\n")
    engine = seam.engine()
    seam.imported(engine, "evtarget")
    (line,) = [line for line in logged(engine) if "fail-demo failed:" in line]
    assert line.startswith("DEBUG fail-demo failed:")
    assert "Traceback (most recent call last)" in line
    assert "ValueError: no such field" in line


def test_calling_a_provided_missing_name_explains_what_is_missing(seam: Seam) -> None:
    """The error a stand-in name raises when called says which name, who exported it, the
    manifest's remedy and which patch to ask about: the user's only clue at that point."""
    seam.patch("proxy-demo", "evtarget",
               extra=PROVIDE.format(name="missing_fn", remedy="upgrade evtarget"))
    evtarget = seam.imported(seam.engine(), "evtarget")
    with pytest.raises(MissingSymbolError) as caught:
        evtarget.missing_fn(1)
    for part in ("evtarget.missing_fn is not available", "It was exported by evtarget 2.",
                 "upgrade evtarget", "sglang-shims explain proxy-demo"):
        assert part in str(caught.value), (part, str(caught.value))


def test_strict_mode_leaves_a_disabled_optional_patch_unjudged(seam: Seam) -> None:
    """Strict mode judges a disabled patch only when it is required (to refuse the import);
    a disabled optional one is never looked at: no gate lines, no judging time."""
    seam.patch(PATCH, "evtarget", CODE)
    engine = seam.engine({"SGLANG_SHIMS_STRICT": "1", "SGLANG_SHIMS_DISABLE": PATCH})
    evtarget = seam.imported(engine, "evtarget")
    entry = seam.status(engine, PATCH)
    assert [entry["state"], entry["gates"], entry["judge_ms"], evtarget.VALUE] == [
        "disabled", [], 0, 1]
