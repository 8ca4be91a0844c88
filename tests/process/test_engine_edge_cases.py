"""Engine and finder reactions at the edges, each pinned on its own: a
watched import that raises is noted on its pending patches; when reports are written the
report follows the process title sglang sets with setproctitle; a namespace-package target
is patched; a meta-path entry without find_spec is passed over."""

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


def test_a_failing_target_import_is_noted_on_its_pending_patch(tmp_path: Path) -> None:
    result = run(tmp_path, """
        import json, sglang_shims
        try:
            import evtarget
        except RuntimeError:
            pass
        entry = sglang_shims.status()["events-demo"]
        # then something loads it around the hook: no longer "being imported"
        import sys, types
        sys.modules["evtarget"] = types.ModuleType("evtarget")
        later = sglang_shims.status()["events-demo"]["state"]
        print(json.dumps([entry["state"], entry["notes"], later]))
    """, body='raise RuntimeError("boom at import")\n')
    assert result.returncode == 0, result.stderr
    assert result.json() == ["pending", ["importing evtarget raised RuntimeError: boom at import"],
                             "bypassed"]


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


STALE = """
import sglang_shims._bootstrap as b
if CHANGE:
    b.OFF_BY_DEFAULT = b.OFF_BY_DEFAULT | {"sgl-kernel-fused-marlin-moe"}
import json
from sglang_shims import engine
print(json.dumps(engine.get().warnings))
"""


def test_a_stale_watch_table_is_warned_about_and_a_fresh_one_is_not() -> None:
    fresh = run_python(STALE.replace("CHANGE", "False"))
    stale = run_python(STALE.replace("CHANGE", "True"))
    assert fresh.returncode == 0 and stale.returncode == 0, fresh.stderr + stale.stderr
    assert fresh.json() == []
    warnings = stale.json()
    assert isinstance(warnings, list) and len(warnings) == 1
    assert warnings[0].startswith("the start-up watch table does not match the built-in patches")


def test_revert_forgets_the_patchs_proxies(tmp_path: Path) -> None:
    site = write_package(tmp_path / "site", {"evtarget/__init__.py": "VALUE = 1\n"})
    patches = write_patch(tmp_path / "patches", "proxy-demo", manifest_text(
        "proxy-demo", "evtarget", extra='[[provide]]\nname = "missing_fn"\n'
        'exported_by = "evtarget 2"\nremedy = "upgrade"\n'))
    result = run_python("""
        import json, sglang_shims, evtarget
        before = sorted(sglang_shims.status()["proxy-demo"]["proxies"])
        sglang_shims.revert()
        entry = sglang_shims.status()["proxy-demo"]
        print(json.dumps([before, entry["state"], entry["proxies"],
                          hasattr(evtarget, "missing_fn")]))
    """, paths=(site,), env={"SGLANG_SHIMS_PATH": str(patches)})
    assert result.returncode == 0, result.stderr
    assert result.json() == [["evtarget.missing_fn"], "reverted", {}, False]


def test_strict_mode_reports_a_broken_patch_folder_once(tmp_path: Path) -> None:
    """The first watched import fails naming the broken patch; later ones go on."""
    site = write_package(tmp_path / "site", {"evtarget/__init__.py": "VALUE = 1\n"})
    patches = write_patch(tmp_path / "patches", PATCH, manifest_text(PATCH, "evtarget"), CODE)
    write_patch(patches, "broken-demo", "this is not TOML = = =\n")
    result = run_python("""
        import json
        outcomes = []
        for attempt in range(2):
            try:
                import evtarget
                outcomes.append(evtarget.VALUE)
            except ImportError as exc:
                outcomes.append(str(exc))
        print(json.dumps(outcomes))
    """, paths=(site,), env={"SGLANG_SHIMS_PATH": str(patches), "SGLANG_SHIMS_STRICT": "1"})
    assert result.returncode == 0, result.stderr
    outcomes = result.json()
    assert isinstance(outcomes, list)
    first, second = outcomes
    assert first.startswith("sglang-shims: strict mode and a patch could not be loaded:")
    assert "broken-demo" in first
    assert second == 2


def test_a_provided_name_the_target_has_is_left_and_noted(tmp_path: Path) -> None:
    """``[[provide]]`` only fills a gap: a name the module already exports is kept, and the
    record says why no stand-in was put there."""
    site = write_package(tmp_path / "site", {"evtarget/__init__.py": "VALUE = 1\n"})
    patches = write_patch(tmp_path / "patches", "provide-demo", manifest_text(
        "provide-demo", "evtarget", extra='[[provide]]\nname = "VALUE"\n'
        'exported_by = "evtarget 2"\nremedy = "upgrade"\n'))
    result = run_python("""
        import json, sglang_shims, evtarget
        entry = sglang_shims.status()["provide-demo"]
        print(json.dumps([evtarget.VALUE, entry["state"], entry["notes"], entry["proxies"]]))
    """, paths=(site,), env={"SGLANG_SHIMS_PATH": str(patches)})
    assert result.returncode == 0, result.stderr
    assert result.json() == [1, "applied", ["evtarget.VALUE exists; left as it is"], {}]


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


def test_a_retiring_patch_undoes_its_changes_inside_the_module(tmp_path: Path) -> None:
    """``ctx.retire()`` after a change: the journal undoes every change, also one on a class
    of the module (a snapshot of the module's own names would not see it)."""
    site = write_package(tmp_path / "site", {"evtarget/__init__.py":
                                             "class Box:\n    SIZE = 1\n"})
    patches = write_patch(tmp_path / "patches", "retire-demo", manifest_text(
        "retire-demo", "evtarget"),
        "def apply(ctx):\n    ctx.setattr(ctx.module.Box, 'SIZE', 5)\n"
        "    ctx.retire('fixed upstream')\n")
    result = run_python("""
        import json, sglang_shims, evtarget
        entry = sglang_shims.status()["retire-demo"]
        print(json.dumps([evtarget.Box.SIZE, entry["state"], entry["reason"]]))
    """, paths=(site,), env={"SGLANG_SHIMS_PATH": str(patches)})
    assert result.returncode == 0, result.stderr
    assert result.json() == [1, "retired", "fixed upstream"]


def test_a_failing_patchs_traceback_is_logged_at_debug(tmp_path: Path) -> None:
    """The status line says what failed; the traceback, for whoever debugs the patch, goes to
    the log at debug level (``SGLANG_SHIMS_LOG=debug``)."""
    site = write_package(tmp_path / "site", {"evtarget/__init__.py": "VALUE = 1\n"})
    patches = write_patch(tmp_path / "patches", "fail-demo", manifest_text(
        "fail-demo", "evtarget"), "def apply(ctx):\n    raise ValueError('no such field')\n")
    result = run_python("import evtarget\n", paths=(site,),
                        env={"SGLANG_SHIMS_PATH": str(patches), "SGLANG_SHIMS_LOG": "debug"})
    assert result.returncode == 0, result.stderr
    assert "fail-demo failed:" in result.stderr
    assert "Traceback (most recent call last)" in result.stderr
    assert "ValueError: no such field" in result.stderr


def test_calling_a_provided_missing_name_explains_what_is_missing(tmp_path: Path) -> None:
    """The error a stand-in name raises when called says which name, who exported it, the
    manifest's remedy and which patch to ask about: the user's only clue at that point."""
    site = write_package(tmp_path / "site", {"evtarget/__init__.py": "VALUE = 1\n"})
    patches = write_patch(tmp_path / "patches", "proxy-demo", manifest_text(
        "proxy-demo", "evtarget", extra='[[provide]]\nname = "missing_fn"\n'
        'exported_by = "evtarget 2"\nremedy = "upgrade evtarget"\n'))
    result = run_python("""
        import evtarget
        try:
            evtarget.missing_fn(1)
        except Exception as exc:
            print(type(exc).__name__, exc)
    """, paths=(site,), env={"SGLANG_SHIMS_PATH": str(patches)})
    assert result.returncode == 0, result.stderr
    for part in ("evtarget.missing_fn is not available", "It was exported by evtarget 2.",
                 "upgrade evtarget", "sglang-shims explain proxy-demo"):
        assert part in result.stdout, (part, result.stdout)


def test_strict_mode_leaves_a_disabled_optional_patch_unjudged(tmp_path: Path) -> None:
    """Strict mode judges a disabled patch only when it is required (to refuse the import);
    a disabled optional one is never looked at: no gate lines, no judging time."""
    result = run(tmp_path, """
        import json, sglang_shims
        import evtarget
        entry = sglang_shims.status()["events-demo"]
        print(json.dumps([entry["state"], entry["gates"], entry["judge_ms"], evtarget.VALUE]))
    """, SGLANG_SHIMS_STRICT="1", SGLANG_SHIMS_DISABLE=PATCH)
    assert result.returncode == 0, result.stderr
    assert result.json() == ["disabled", [], 0, 1]
