"""The engine in real processes: each outcome, its report, toggles, strict mode, threads.

Every test runs a fresh interpreter with a small target package and a patch folder
given through ``SGLANG_SHIMS_PATH``, the way users add their own patches.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from sglang_shims.catalog.load import load

from ..support.packages import manifest_text, write_package, write_patch
from ..support.run import Result, run_python

TARGET = {
    "shimtarget/__init__.py": "",
    "shimtarget/mod.py": """
        import os
        VALUE = 1
        SEEN_BEFORE = globals().get("INJECTED", None)

        def greet(name):
            return "hello " + name
    """,
}

APPLY_OK = """
    calls = 0

    def apply(ctx):
        global calls
        calls += 1
        ctx.setattr(ctx.module, "VALUE", 2)
        ctx.wrap(ctx.module, "greet", lambda wrapped, inst, args, kw: wrapped(*args, **kw) + "!")
        ctx.note("greeting made louder")
"""

APPLY_FAILS_MIDWAY = """
    def apply(ctx):
        ctx.setattr(ctx.module, "VALUE", 2)
        ctx.module.BYPASS = "written without the journal"
        raise RuntimeError("boom after one change")
"""

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


def stock_namespace(target: Path) -> list[str]:
    result = run_python("import shimtarget.mod as m; print(sorted(vars(m)))",
                        paths=(target,), env={"SGLANG_SHIMS": "0"})
    return eval(result.stdout)


def test_applied(target: Path, tmp_path: Path) -> None:
    result = run(target, patch_dir(tmp_path), """
        import shimtarget.mod as m
        import sys
        from sglang_shims import _bootstrap
        print(m.VALUE, m.greet("x"))
        print(type(m.__loader__).__name__, type(m.__spec__.loader).__name__)
        print(_bootstrap.BOOT.watcher in sys.meta_path)
    """, status=True, SGLANG_SHIMS_DISABLE=",".join(m.id for m in load().manifests))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "2 hello x!"
    assert lines[1] == "SourceFileLoader SourceFileLoader"  # the real loader was handed back
    assert lines[2] == "False"  # nothing else enabled to watch: the finder removed itself
    entry = result.json()["demo-patch"]
    assert entry["state"] == "applied"
    assert entry["changes"] == ["setattr shimtarget.mod.VALUE", "setattr shimtarget.mod.greet"]
    assert entry["notes"] == ["greeting made louder"]
    assert entry["source"].endswith("patches")


def test_failed_patch_is_rolled_back(target: Path, tmp_path: Path) -> None:
    result = run(target, patch_dir(tmp_path, APPLY_FAILS_MIDWAY), """
        import shimtarget.mod as m
        print(m.VALUE, sorted(vars(m)))
    """, status=True)
    assert result.returncode == 0, result.stderr
    value, names = result.stdout.splitlines()[0].split(" ", 1)
    assert value == "1"
    assert eval(names) == stock_namespace(target)
    entry = result.json()["demo-patch"]
    assert entry["state"] == "failed"
    assert "RuntimeError: boom after one change; rolled back" in entry["reason"]
    assert "removed BYPASS" in entry["reason"]
    assert "demo-patch: failed" in result.stderr  # reported loudly, once


@pytest.mark.parametrize("env", [{"SGLANG_SHIMS_STRICT": "1"}, {}])
def test_strict_and_required_raise(target: Path, tmp_path: Path, env: dict[str, str]) -> None:
    policy = "optional" if env else "required"
    patches = patch_dir(tmp_path, APPLY_FAILS_MIDWAY, policy=policy)
    result = run(target, patches, """
        try:
            import shimtarget.mod
        except ImportError as exc:
            print("ImportError:", exc)
    """, **env)
    assert result.returncode == 0, result.stderr
    assert "ImportError: sglang-shims: patch 'demo-patch' is failed" in result.stdout
    assert "boom after one change" in result.stdout
    assert ("strict mode" if env else "it is required") in result.stdout


def test_drifted_target_left_stock(target: Path, tmp_path: Path) -> None:
    patches = patch_dir(tmp_path, extra=(
        '[[fingerprint]]\nmodule = "shimtarget.mod"\nanchors = ["def greet(name, loud):"]\n'))
    result = run(target, patches, "import shimtarget.mod as m\nprint(m.VALUE)\n", status=True)
    assert result.stdout.splitlines()[0] == "1"
    entry = result.json()["demo-patch"]
    assert entry["state"] == "drifted"
    assert "anchor not found: 'def greet(name, loud):'" in entry["reason"]
    strict = run(target, patches, "import shimtarget.mod", SGLANG_SHIMS_STRICT="1")
    assert strict.returncode == 1 and "is drifted" in strict.stderr


def test_fingerprint_match_applies(target: Path, tmp_path: Path) -> None:
    patches = patch_dir(tmp_path, extra=(
        '[[fingerprint]]\nmodule = "shimtarget.mod"\nanchors = ["def greet(name):"]\n'))
    result = run(target, patches, "import shimtarget.mod\n", status=True)
    assert result.json()["demo-patch"]["state"] == "applied"


def test_retired(target: Path, tmp_path: Path) -> None:
    patches = patch_dir(tmp_path, retire='installed = ["packaging"]')
    result = run(target, patches, "import shimtarget.mod as m\nprint(m.VALUE)\n", status=True)
    assert result.stdout.splitlines()[0] == "1"
    entry = result.json()["demo-patch"]
    assert entry["state"] == "retired" and "packaging installed" in entry["reason"]


def test_retired_from_patch_code(target: Path, tmp_path: Path) -> None:
    code = "def apply(ctx):\n    ctx.setattr(ctx.module, 'VALUE', 5)\n    ctx.retire('fixed')\n"
    result = run(target, patch_dir(tmp_path, code), "import shimtarget.mod as m\nprint(m.VALUE)\n",
                 status=True)
    assert result.stdout.splitlines()[0] == "1"
    assert result.json()["demo-patch"]["state"] == "retired"


def test_not_applicable_names_gate_and_version(target: Path, tmp_path: Path) -> None:
    patches = patch_dir(tmp_path, requires='packaging = "<1"')
    result = run(target, patches, "import shimtarget.mod\n", status=True)
    entry = result.json()["demo-patch"]
    assert entry["state"] == "not-applicable"
    assert entry["reason"].startswith("packaging ") and entry["reason"].endswith("not in <1")


@pytest.mark.parametrize(("env", "by"), [
    ({"SGLANG_SHIMS_DISABLE": "demo-patch"}, "SGLANG_SHIMS_DISABLE"),
    ({"SGLANG_SHIMS_PATCH_DEMO_PATCH": "0"}, "SGLANG_SHIMS_PATCH_DEMO_PATCH=0"),
    ({"SGLANG_SHIMS": "0"}, "SGLANG_SHIMS=0"),
])
def test_disabled(target: Path, tmp_path: Path, env: dict[str, str], by: str) -> None:
    result = run(target, patch_dir(tmp_path), "import shimtarget.mod as m\nprint(m.VALUE)\n",
                 status=True, **env)
    assert result.stdout.splitlines()[0] == "1"
    entry = result.json()["demo-patch"]
    assert entry == {**entry, "state": "disabled", "reason": f"disabled by {by}"}


def test_default_off_needs_enable(target: Path, tmp_path: Path) -> None:
    patches = patch_dir(tmp_path, default="off")
    code = "import shimtarget.mod as m\nprint(m.VALUE)\n"
    assert run(target, patches, code).stdout.strip() == "1"
    assert run(target, patches, code, SGLANG_SHIMS_ENABLE="demo-patch").stdout.strip() == "2"


def test_unknown_ids_warned(target: Path, tmp_path: Path) -> None:
    result = run(target, patch_dir(tmp_path), "import shimtarget.mod",
                 SGLANG_SHIMS_DISABLE="no-such-patch,demo-pach")
    assert ("SGLANG_SHIMS_DISABLE names 2 unknown patch ids: 'no-such-patch', 'demo-pach'"
            " (did you mean demo-patch?)") in result.stderr
    assert result.stderr.count("unknown patch") == 1


def test_before_phase(target: Path, tmp_path: Path) -> None:
    code = "def apply(ctx):\n    ctx.setattr(ctx.module, 'INJECTED', 'early')\n"
    patches = patch_dir(tmp_path, code, when="before")
    result = run(target, patches, "import shimtarget.mod as m\nprint(m.SEEN_BEFORE)")
    assert result.stdout.strip() == "early", result.stderr


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


def test_late_install_of_before_patch_fails_with_reason(target: Path, tmp_path: Path) -> None:
    patches = patch_dir(tmp_path, "def apply(ctx):\n    pass\n", when="before")
    result = run_python("import shimtarget.mod\nimport sglang_shims\nsglang_shims.install()\n"
                        + STATUS, paths=(target,), activate=False,
                        env={"SGLANG_SHIMS_PATH": str(patches)})
    entry = result.json()["demo-patch"]
    assert entry["state"] == "failed" and "must act before its body runs" in entry["reason"]


def test_revert_and_reinstall(target: Path, tmp_path: Path) -> None:
    result = run(target, patch_dir(tmp_path), """
        import shimtarget.mod as m, sglang_shims
        before = m.VALUE, m.greet("a")
        errors = sglang_shims.revert()
        after = m.VALUE, m.greet("a"), sglang_shims.status()["demo-patch"]["state"]
        sglang_shims.install()
        print(before, errors, after, m.VALUE)
    """)
    assert result.stdout.strip() == (
        "(2, 'hello a!') [] (1, 'hello a', 'reverted') 2"), result.stderr


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


def test_target_import_error_is_noted(target: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    write_package(broken, {"shimtarget/__init__.py": "", "shimtarget/mod.py": "raise OSError('x')"})
    result = run(broken, patch_dir(tmp_path), """
        try:
            import shimtarget.mod
        except OSError:
            pass
    """, status=True)
    entry = result.json()["demo-patch"]
    assert entry["state"] == "pending"
    assert entry["notes"] == ["importing shimtarget.mod raised OSError: x"]


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


def test_world_writable_patch_dir_refused(target: Path, tmp_path: Path) -> None:
    patches = patch_dir(tmp_path)
    patches.chmod(0o777)
    result = run(target, patches, "import shimtarget.mod as m\nprint(m.VALUE)")
    assert result.stdout.strip() == "1"
    assert "refused: it is world-writable" in result.stderr


def test_reimport_after_patching_is_reported(target: Path, tmp_path: Path) -> None:
    result = run(target, patch_dir(tmp_path), """
        import importlib, sys
        import shimtarget.mod
        del sys.modules["shimtarget.mod"]
        import shimtarget.mod as again
        print(again.VALUE)
    """, status=True)
    assert result.stdout.splitlines()[0] == "1"
    entry = result.json()["demo-patch"]
    assert entry["state"] == "stale" and "imported again" in entry["reason"]


def test_extra_paths_are_vetted(tmp_path: Path) -> None:
    """SGLANG_SHIMS_PATH: relative, missing and world-writable entries are refused, each
    with a reason; nothing is ever read from the current directory implicitly."""
    from sglang_shims.catalog.load import extra_roots

    good = tmp_path / "good"
    good.mkdir(mode=0o755)
    loose = tmp_path / "loose"
    loose.mkdir()
    loose.chmod(0o777)
    value = ":".join(["relative/dir", str(tmp_path / "missing"), str(loose), str(good), ""])
    roots, warnings = extra_roots(value)
    assert roots == [good]
    assert len(warnings) == 3
    assert "relative" in warnings[0] and "current directory" in warnings[0]
    assert "cannot stat" in warnings[1]
    assert "world-writable" in warnings[2]


def test_refused_extra_folder_named_like_a_builtin_keeps_the_builtin(tmp_path: Path) -> None:
    """A refused extra folder is reported under its own key; the built-in patch of the same
    name keeps its record (it used to be overwritten with the extra folder's failure)."""
    patches = write_patch(tmp_path / "patches", "alloc-conf-env-mirror",
                          manifest_text("alloc-conf-env-mirror", "shimtarget.mod"), APPLY_OK)
    (patches / "alloc-conf-env-mirror" / "patch.py").chmod(0o666)  # writable by anyone
    result = run_python(STATUS, env={"SGLANG_SHIMS_PATH": str(patches)})
    data = result.json()
    assert data["alloc-conf-env-mirror"]["state"] == "pending", data["alloc-conf-env-mirror"]
    refused = [entry for key, entry in data.items()
               if key != "alloc-conf-env-mirror" and "alloc-conf-env-mirror" in key]
    assert len(refused) == 1 and refused[0]["state"] == "failed"
    assert "refused" in refused[0]["reason"]
