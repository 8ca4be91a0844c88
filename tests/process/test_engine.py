"""The engine in real processes: what only a fresh interpreter shows.

The loader handed back to the module and the finder leaving ``sys.meta_path``, the public
``install()`` applying late, threads importing at once, the report file, the summary line
on stderr.  Every test runs a fresh interpreter with a small target package and a patch
folder given through ``SGLANG_SHIMS_PATH``, the way users add their own patches.  The
engine's decisions themselves are checked in-process, in ``tests/unit/test_engine.py``.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from sglang_shims.catalog.load import load

from ..support.packages import manifest_text, write_package, write_patch
from ..support.run import Result, run_python

TARGET = {"shimtarget/__init__.py": "", "shimtarget/mod.py": "VALUE = 1\n"}

APPLY_OK = "def apply(ctx):\n    ctx.setattr(ctx.module, 'VALUE', 2)\n"

STATUS = """
import json, sglang_shims
print(json.dumps(sglang_shims.status()))
"""


@pytest.fixture
def target(tmp_path: Path) -> Path:
    return write_package(tmp_path / "site", TARGET)


def patch_dir(tmp_path: Path, code: str | None = APPLY_OK, **kw: str) -> Path:
    root = tmp_path / "patches"
    write_patch(root, "demo-patch", manifest_text("demo-patch", "shimtarget.mod", **kw), code)
    return root


def run(target: Path, patches: Path, code: str, status: bool = False, timeout: float = 120,
        **env: str) -> Result:
    """Run ``code`` with the demo patch folder; ``status`` prints the status JSON last."""
    code = textwrap.dedent(code) + (STATUS if status else "")
    return run_python(code, paths=(target,), env={"SGLANG_SHIMS_PATH": str(patches), **env},
                      timeout=timeout)


def test_the_loader_is_handed_back_and_the_finder_leaves(target: Path, tmp_path: Path) -> None:
    result = run(target, patch_dir(tmp_path), """
        import shimtarget.mod as m
        import sys
        from sglang_shims import _bootstrap
        print(m.VALUE)
        print(type(m.__loader__).__name__, type(m.__spec__.loader).__name__)
        print(_bootstrap.BOOT.watcher in sys.meta_path)
    """, status=True, SGLANG_SHIMS_DISABLE=",".join(m.id for m in load().manifests))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "2"
    assert lines[1] == "SourceFileLoader SourceFileLoader"  # the real loader was handed back
    assert lines[2] == "False"  # nothing else enabled to watch: the finder removed itself
    assert result.json()["demo-patch"]["state"] == "applied"


def test_late_install(target: Path, tmp_path: Path) -> None:
    code = """
        import shimtarget.mod as m
        assert m.VALUE == 1
        import json, sglang_shims
        status = sglang_shims.install()
        print(m.VALUE)
        print(json.dumps(status))
    """
    result = run_python(code, paths=(target,), activate=False,
                        env={"SGLANG_SHIMS_PATH": str(patch_dir(tmp_path))})
    assert result.stdout.splitlines()[0] == "2", result.stderr
    entry = result.json()["demo-patch"]
    assert entry["state"] == "applied" and entry["late"] is True
    assert "late" in entry["reason"]


def test_threads_apply_exactly_once(target: Path, tmp_path: Path) -> None:
    code = """
        import time
        calls = 0
        def apply(ctx):
            global calls
            calls += 1
            time.sleep(0.3)
            ctx.setattr(ctx.module, "VALUE", 2)
    """
    result = run(target, patch_dir(tmp_path, code), """
        import importlib, sys, threading
        seen = []
        def worker():
            seen.append(importlib.import_module("shimtarget.mod").VALUE)
        threads = [threading.Thread(target=worker) for _ in range(16)]
        for t in threads: t.start()
        for t in threads: t.join(timeout=30)
        code = sys.modules["sglang_shims.patches.demo_patch"]
        print(code.calls, sorted(set(seen)), len(seen))
    """, timeout=60)
    assert result.stdout.strip() == "1 [2] 16", result.stderr


def test_report_dir(target: Path, tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    result = run(target, patch_dir(tmp_path), "import shimtarget.mod, os\nprint(os.getpid())",
                 SGLANG_SHIMS_REPORT_DIR=str(reports))
    pid = result.stdout.strip()
    data = json.loads((reports / f"{pid}.json").read_text())
    assert data["process"]["pid"] == int(pid) and data["process"]["role"] == "main"
    assert data["patches"]["demo-patch"]["state"] == "applied"
    assert list(reports.iterdir()) == [reports / f"{pid}.json"]  # no temp files left


def test_summary_line_at_info(target: Path, tmp_path: Path) -> None:
    result = run(target, patch_dir(tmp_path), "import shimtarget.mod", SGLANG_SHIMS_LOG="info")
    lines = [ln for ln in result.stderr.splitlines() if "patches:" in ln]
    assert len(lines) == 1 and "1 applied (demo-patch)" in lines[0]
