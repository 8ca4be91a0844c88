"""Engine reactions no other quick test pinned (found by mutation testing): a watched
import that raises is noted on its pending patches, and when reports are written the
report follows the process title sglang sets with setproctitle."""

from __future__ import annotations

from pathlib import Path

from .conftest import Result, manifest_text, run_python, write_package, write_patch

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
        print(json.dumps([entry["state"], entry["notes"]]))
    """, body='raise RuntimeError("boom at import")\n')
    assert result.returncode == 0, result.stderr
    assert result.json() == ["pending", ["importing evtarget raised RuntimeError: boom at import"]]


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
