"""The process's report (``engine.process.write_report``): written where
``SGLANG_SHIMS_REPORT_DIR`` says, with every patch's record; a folder that cannot be written
is said once, never raised."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import types
from pathlib import Path

import pytest

from sglang_shims import _bootstrap
from sglang_shims._errors import MissingSymbolError
from sglang_shims.engine import process, record

from ..support.engine import Seam, logged


def test_the_report_holds_every_patchs_record(seam: Seam, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SGLANG_SHIMS_REPORT_DIR", str(tmp_path / "reports"))
    engine = seam.engine()
    process.write_report(engine)
    data = json.loads((tmp_path / "reports" / f"{os.getpid()}.json").read_text())
    assert set(data["patches"]) == set(engine.status())
    assert all("proxies" in entry for entry in data["patches"].values())
    assert data["process"]["pid"] == os.getpid()


def test_no_report_folder_no_report(seam: Seam, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SGLANG_SHIMS_REPORT_DIR", raising=False)
    engine = seam.engine()
    process.write_report(engine)
    assert not [line for line in logged(engine) if "report" in line]


def test_a_folder_that_cannot_be_written_is_said_once(seam: Seam, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("SGLANG_SHIMS_REPORT_DIR", str(tmp_path / "file" / "reports"))
    monkeypatch.setattr(process, "_report_failed", False)
    engine = seam.engine()
    process.write_report(engine)
    process.write_report(engine)
    said = [line for line in logged(engine) if "cannot write the report to" in line]
    assert len(said) == 1
    assert said[0].startswith(f"WARNING cannot write the report to {tmp_path / 'file'}")


def test_the_wake_up_time_is_in_milliseconds(monkeypatch: pytest.MonkeyPatch) -> None:
    """``timing["wake_ms"]`` and ``["wake_cpu_ms"]``: from the first watched import (here
    10,000 s ago, wall and CPU) to the engine ready."""
    monkeypatch.setattr(process, "_engine", None)
    monkeypatch.setattr(process.atexit, "register", lambda *args: None)
    monkeypatch.setattr(process.os, "register_at_fork", lambda **kwargs: None)
    monkeypatch.delenv("SGLANG_SHIMS_REPORT_DIR", raising=False)
    boot = _bootstrap.Boot()
    boot.woke, boot.woke_cpu = time.perf_counter() - 10_000, time.thread_time() - 10_000
    engine = process.get(boot)
    for key in ("wake_ms", "wake_cpu_ms"):
        assert 10_000_000 <= engine.timing[key] < 10_009_000, key  # building took < 9 s


def test_the_report_counts_the_calls_of_a_provided_name(seam: Seam, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A provided stand-in name's calls are in the report as ``status()`` has them."""
    monkeypatch.setenv("SGLANG_SHIMS_REPORT_DIR", str(tmp_path / "reports"))
    seam.patch("proxy-demo", "evtarget", extra='[[provide]]\nname = "missing_fn"\n'
               'exported_by = "evtarget 2"\nremedy = "upgrade evtarget"\n')
    engine = seam.engine()
    target = seam.imported(engine, "evtarget")
    with pytest.raises(MissingSymbolError):
        target.missing_fn()
    process.write_report(engine)
    data = json.loads((tmp_path / "reports" / f"{os.getpid()}.json").read_text())
    proxies = data["patches"]["proxy-demo"]["proxies"]
    assert proxies == engine.status()["proxy-demo"]["proxies"] != {}


def test_the_report_is_written_again_when_the_process_names_itself(
        seam: Seam, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """sglang names its processes (``setproctitle``) after the patches ran: the title is
    wrapped, once, to write the report again; the title is still set, its result kept."""
    reports = tmp_path / "reports"
    monkeypatch.setenv("SGLANG_SHIMS_REPORT_DIR", str(reports))
    titles: list[str] = []
    module = types.ModuleType("setproctitle")
    module.setproctitle = lambda title: titles.append(title) or "set"  # type: ignore[attr-defined]
    engine = seam.engine()
    process._wrap_title(engine, module)
    wrapped = module.setproctitle  # type: ignore[attr-defined]
    process._wrap_title(engine, module)
    assert module.setproctitle is wrapped  # type: ignore[attr-defined]  # not twice
    assert not reports.exists()
    assert wrapped("sglang::scheduler_TP0") == "set" and titles == ["sglang::scheduler_TP0"]
    assert (reports / f"{os.getpid()}.json").is_file()
    process._wrap_title(engine, types.ModuleType("setproctitle"))  # nothing to wrap


def test_a_fork_child_writes_the_state_it_inherited(seam: Seam, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """In a fork child, at once: the report, marked as the parent's state copied at fork;
    then the child's own from its multiprocessing exit."""
    monkeypatch.setenv("SGLANG_SHIMS_REPORT_DIR", str(tmp_path / "reports"))
    monkeypatch.setattr(record, "FORK", {})
    registered: list[tuple[object, object]] = []
    monkeypatch.setitem(sys.modules, "multiprocessing.util", types.SimpleNamespace(
        register_after_fork=lambda obj, hook: registered.append((obj, hook))))
    engine = seam.engine()
    process._forked(engine)
    data = json.loads((tmp_path / "reports" / f"{os.getpid()}.json").read_text())
    assert (data["process"]["forked_from"], data["process"]["inherited"]) == (os.getppid(), True)
    assert {"parent": os.getppid(), "inherited": False} == record.FORK
    assert registered == [(engine, process._report_at_child_exit)]


def test_a_fork_child_does_not_wait_for_a_lock_its_parent_held(
        seam: Seam, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A thread of the parent held the engine's lock at fork: in the child that thread is
    gone, so the child takes a new lock rather than wait forever for the copied one (its
    report reads the records under the lock)."""
    monkeypatch.setenv("SGLANG_SHIMS_REPORT_DIR", str(tmp_path / "reports"))
    monkeypatch.setattr(record, "FORK", {})
    monkeypatch.delitem(sys.modules, "multiprocessing.util", raising=False)
    engine = seam.engine()
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with engine.lock:
            held.set()
            release.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait(30)
    child = threading.Thread(target=process._forked, args=(engine,), daemon=True)
    child.start()
    child.join(10)
    finished = not child.is_alive()
    release.set()
    holder.join()
    assert finished and (tmp_path / "reports" / f"{os.getpid()}.json").is_file()
