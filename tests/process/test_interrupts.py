"""Ctrl-C and ``sys.exit`` pass through the shims as through stock Python, after the
patch that was running is undone and named; extra patches on what the engine itself runs
on are refused instead of breaking the user's import."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..support.packages import manifest_text, write_package, write_patch
from ..support.run import run_python

TARGET = {"shimtarget/__init__.py": "VALUE = 1\n"}
PROBE = """
    import json, sys
    try:
        import shimtarget
        print(json.dumps({"imported": True, "value": shimtarget.VALUE}))
    except BaseException as exc:
        import sglang_shims
        record = sglang_shims.status()["stops"]
        print(json.dumps({"caught": type(exc).__name__, "in_modules": "shimtarget" in sys.modules,
                          "state": record["state"], "reason": record["reason"]}))
"""

@pytest.fixture(autouse=True)
def ctrl_c_reaches_the_programs() -> Iterator[None]:
    """A child inherits an ignored SIGINT (a shell's background job has it ignored, and
    Python then leaves it so): while these tests run, SIGINT has its default action here,
    so the programs they start get Ctrl-C as at a terminal."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


STOPS = {
    "ctrl-c": ("import os, signal, time\n"
               "def apply(ctx):\n"
               "    ctx.setattr(ctx.module, 'VALUE', 2)\n"
               "    os.kill(os.getpid(), signal.SIGINT)\n"
               "    time.sleep(30)\n", "KeyboardInterrupt"),
    "sys.exit": ("import sys\n"
                 "def apply(ctx):\n"
                 "    ctx.setattr(ctx.module, 'VALUE', 2)\n"
                 "    sys.exit(7)\n", "SystemExit"),
}


@pytest.mark.parametrize("how", sorted(STOPS))
def test_a_stopped_patch_is_undone_named_and_the_stop_passes_through(tmp_path: Path,
                                                                     how: str) -> None:
    code, kind = STOPS[how]
    site = write_package(tmp_path / "site", TARGET)
    patches = write_patch(tmp_path / "sp", "stops", manifest_text("stops", "shimtarget"), code)
    result = run_python(PROBE, paths=(site,), env={"SGLANG_SHIMS_PATH": str(patches)})
    data = result.json()
    assert data["caught"] == kind, data  # not swallowed: the import itself raised it
    assert data["in_modules"] is False  # the import failed as a stock one would
    assert data["state"] == "failed"
    assert data["reason"] == f"interrupted by {kind} while it ran (stops/patch.py:4); rolled back"
    assert "internal error" not in result.stderr and "reinstall" not in result.stderr
    assert "stops: failed (interrupted by" in result.stderr  # named at the default level


def test_ctrl_c_in_a_patch_ends_the_program_as_stock_python_does(tmp_path: Path) -> None:
    site = write_package(tmp_path / "site", TARGET)
    patches = write_patch(tmp_path / "sp", "stops", manifest_text("stops", "shimtarget"),
                          STOPS["ctrl-c"][0])
    result = run_python("import shimtarget\nprint('went on')\n", paths=(site,),
                        env={"SGLANG_SHIMS_PATH": str(patches)})
    assert result.returncode == -signal.SIGINT  # killed by the signal, as CPython ends
    assert "went on" not in result.stdout
    assert result.stderr.rstrip().endswith("KeyboardInterrupt")


def test_a_stand_in_is_never_used_for_an_interrupted_module(tmp_path: Path) -> None:
    """The module's own body stops with Ctrl-C: no stand-in takes its place."""
    site = write_package(tmp_path / "site", {
        "shimtarget/__init__.py": "import os, signal\nos.kill(os.getpid(), signal.SIGINT)\n"})
    extra = """
[[provide]]
name = "VALUE"
"""
    patches = write_patch(tmp_path / "sp", "standin",
                          manifest_text("standin", "shimtarget", when="instead", extra=extra),
                          "def unusable(ctx):\n    return ''\n"
                          "def provide(ctx):\n    ctx.setattr(ctx.module, 'VALUE', 3)\n")
    result = run_python("""
        import json
        try:
            import shimtarget
            print(json.dumps("imported"))
        except KeyboardInterrupt:
            print(json.dumps("interrupted"))
    """, paths=(site,), env={"SGLANG_SHIMS_PATH": str(patches)})
    assert result.json() == "interrupted", result.stderr


@pytest.mark.parametrize("target", ["packaging.specifiers", "json", "wrapt"])
def test_an_extra_patch_on_what_the_engine_runs_on_is_refused(tmp_path: Path,
                                                              target: str) -> None:
    patches = write_patch(tmp_path / "sp", "selfmod", manifest_text("selfmod", target),
                          "def apply(ctx):\n    ctx.setattr(ctx.module, 'SHIMMED', True)\n")
    result = run_python(f"""
        import importlib, json
        module = importlib.import_module({target!r})
        import sglang_shims
        record = sglang_shims.status()["selfmod"]
        print(json.dumps([getattr(module, "SHIMMED", None), record["state"], record["reason"]]))
    """, env={"SGLANG_SHIMS_PATH": str(patches)})
    shimmed, state, reason = result.json()  # type: ignore[misc]
    assert (shimmed, state) == (None, "failed"), result.stderr
    assert reason.startswith(f"refused: its target {target} is part of the standard library")
