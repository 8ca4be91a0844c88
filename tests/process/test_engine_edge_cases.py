"""Engine and finder reactions at the edges that only a fresh interpreter shows, each pinned
on its own: when reports are written the report follows the process title sglang sets with
setproctitle; a namespace-package target is patched; a meta-path entry without find_spec
is passed over; ``install()`` after ``revert()`` watches again; waking is timed.  The
engine's own edges are checked in-process, in ``tests/unit/test_engine_edge_cases.py``."""

from __future__ import annotations

from pathlib import Path

from ..support.packages import manifest_text, write_package, write_patch
from ..support.run import Result, run_python

PATCH = "events-demo"
CODE = "def apply(ctx):\n    ctx.setattr(ctx.module, 'VALUE', 2)\n"

TITLE = """
_title = "python"
def setproctitle(title):
    global _title
    _title = title
def getproctitle():
    return _title
"""


def run(tmp_path: Path, code: str, body: str = "VALUE = 1\n", **env: str) -> Result:
    site = write_package(tmp_path / "site", {"evtarget/__init__.py": body,
                                             "setproctitle.py": TITLE})
    patches = write_patch(tmp_path / "patches", PATCH, manifest_text(PATCH, "evtarget"), CODE)
    return run_python(code, paths=(site,), env={"SGLANG_SHIMS_PATH": str(patches), **env})


def test_report_follows_the_process_title(tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    result = run(tmp_path, """
        import json, os, sys
        import evtarget
        import setproctitle
        setproctitle.setproctitle("sglang::scheduler_TP0")
        folder = os.environ["SGLANG_SHIMS_REPORT_DIR"]
        with open(os.path.join(folder, f"{os.getpid()}.json")) as f:
            print(json.dumps(json.load(f)["process"]["role"]))
        sys.stdout.flush()
        os._exit(0)  # no exit hook: the report must already say it
    """, SGLANG_SHIMS_REPORT_DIR=str(reports))
    assert result.returncode == 0, result.stderr
    assert result.json() == "scheduler_TP0"


NS_CODE = "def apply(ctx):\n    ctx.setattr(ctx.module, 'PATCHED', True)\n"


def test_namespace_package_target_is_patched(tmp_path: Path) -> None:
    """A folder without __init__.py (what a broken uninstall leaves) is still seen."""
    site = write_package(tmp_path / "site", {"nstarget/sub.py": "X = 1\n"})
    patches = write_patch(tmp_path / "patches", "ns-demo", manifest_text("ns-demo", "nstarget"),
                          NS_CODE)
    result = run_python("""
        import json, sglang_shims, nstarget, nstarget.sub
        print(json.dumps([getattr(nstarget, "PATCHED", False), nstarget.sub.X,
                          sglang_shims.status()["ns-demo"]["state"]]))
    """, paths=(site,), env={"SGLANG_SHIMS_PATH": str(patches)})
    assert result.returncode == 0, result.stderr
    assert result.json() == [True, 1, "applied"]


def test_a_meta_path_entry_without_find_spec_is_passed_over(tmp_path: Path) -> None:
    result = run(tmp_path, """
        import json, sys, sglang_shims
        class Legacy:  # an old-style finder: find_module only
            def find_module(self, name, path=None):
                return None
        sys.meta_path.insert(1, Legacy())
        import evtarget
        print(json.dumps([evtarget.VALUE, sglang_shims.status()["events-demo"]["state"]]))
    """)
    assert result.returncode == 0, result.stderr
    assert result.json() == [2, "applied"]




def test_install_after_revert_watches_pending_targets_again(tmp_path: Path) -> None:
    """``revert()`` removes the import hook; a later ``install()`` must put it back for the
    patches still waiting for their module, or they would silently never apply."""
    result = run(tmp_path, """
        import json, sglang_shims
        sglang_shims.install()
        assert sglang_shims.status()["events-demo"]["state"] == "pending"
        sglang_shims.revert()
        sglang_shims.install()
        import evtarget
        print(json.dumps([evtarget.VALUE, sglang_shims.status()["events-demo"]["state"]]))
    """)
    assert result.returncode == 0, result.stderr
    assert result.json() == [2, "applied"]


def test_wake_up_cpu_time_is_measured(tmp_path: Path) -> None:
    """The report's wake-up timing has the importing thread's CPU time as well as the wall
    time: waking reads the patch catalog, which costs CPU time, and one thread's CPU time
    cannot exceed the wall time it ran in."""
    result = run(tmp_path, """
        import json, evtarget
        from sglang_shims import engine
        timing = engine.get().timing
        print(json.dumps([timing["wake_ms"], timing["wake_cpu_ms"]]))
    """)
    assert result.returncode == 0, result.stderr
    data = result.json()
    assert isinstance(data, list)
    wall, cpu = data
    assert 0 < cpu <= wall + 1, (wall, cpu)
