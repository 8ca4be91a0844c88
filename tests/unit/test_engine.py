"""The engine's decisions, in the test's own process: each outcome and its record, toggles,
strict mode and required patches, late application and revert.

Each test writes a patch folder (read as ``SGLANG_SHIMS_PATH`` would be), builds a real
engine over it and the built-in catalog, and imports a small target module through the
loader's events (:mod:`tests.support.engine`).  What only a fresh interpreter shows --
the loader handed back, the finder leaving, threads, the report file, the summary at
exit, the public ``install()`` -- is in ``tests/process/test_engine.py``.
"""

from __future__ import annotations

import pytest

from sglang_shims.catalog.load import extra_roots

from ..support.engine import Seam, logged

TARGET = "shimtarget.mod"
BODY = """
import os
VALUE = 1
SEEN_BEFORE = globals().get("INJECTED", None)

def greet(name):
    return "hello " + name
"""

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


def demo(seam: Seam, code: str | None = APPLY_OK, **fields: str) -> None:
    seam.patch("demo-patch", TARGET, code, **fields)


def stock_names(seam: Seam) -> list[str]:
    """The names a stock import of the target binds (another name: nothing watches it)."""
    return sorted(vars(seam.imported_stock("shimtarget.stock", BODY)))


def test_applied(seam: Seam) -> None:
    demo(seam)
    engine = seam.engine()
    m = seam.imported(engine, TARGET, BODY)
    assert (m.VALUE, m.greet("x")) == (2, "hello x!")
    entry = seam.status(engine, "demo-patch")
    assert entry["state"] == "applied"
    assert entry["changes"] == ["setattr shimtarget.mod.VALUE", "setattr shimtarget.mod.greet"]
    assert entry["notes"] == ["greeting made louder"]
    assert entry["source"].endswith("patches")


def test_failed_patch_is_rolled_back(seam: Seam) -> None:
    demo(seam, APPLY_FAILS_MIDWAY)
    engine = seam.engine()
    m = seam.imported(engine, TARGET, BODY)
    assert m.VALUE == 1
    assert sorted(vars(m)) == stock_names(seam)
    entry = seam.status(engine, "demo-patch")
    assert entry["state"] == "failed"
    assert "RuntimeError: boom after one change; rolled back" in entry["reason"]
    assert "removed BYPASS" in entry["reason"]
    assert [line for line in logged(engine) if "demo-patch: failed" in line] == [
        f"WARNING demo-patch: failed ({entry['reason']})"]  # reported loudly, once


@pytest.mark.parametrize("environ", [{"SGLANG_SHIMS_STRICT": "1"}, {}])
def test_strict_and_required_raise(seam: Seam, environ: dict[str, str]) -> None:
    demo(seam, APPLY_FAILS_MIDWAY, policy="optional" if environ else "required")
    engine = seam.engine(environ)
    with pytest.raises(ImportError) as caught:
        seam.imported(engine, TARGET, BODY)
    message = str(caught.value)
    assert message.startswith("sglang-shims: patch 'demo-patch' is failed")
    assert "boom after one change" in message
    assert ("strict mode" if environ else "it is required") in message


DRIFT = '[[fingerprint]]\nmodule = "shimtarget.mod"\nanchors = ["def greet(name, loud):"]\n'


def test_drifted_target_left_stock(seam: Seam) -> None:
    demo(seam, extra=DRIFT)
    engine = seam.engine()
    assert seam.imported(engine, TARGET, BODY).VALUE == 1
    entry = seam.status(engine, "demo-patch")
    assert entry["state"] == "drifted"
    assert "anchor not found: 'def greet(name, loud):'" in entry["reason"]
    with pytest.raises(ImportError, match="is drifted"):
        seam.imported(seam.engine({"SGLANG_SHIMS_STRICT": "1"}), TARGET, BODY)


def test_fingerprint_match_applies(seam: Seam) -> None:
    demo(seam, extra=DRIFT.replace("def greet(name, loud):", "def greet(name):"))
    engine = seam.engine()
    seam.imported(engine, TARGET, BODY)
    assert seam.status(engine, "demo-patch")["state"] == "applied"


def test_retired(seam: Seam) -> None:
    demo(seam, retire='installed = ["packaging"]')
    engine = seam.engine()
    assert seam.imported(engine, TARGET, BODY).VALUE == 1
    entry = seam.status(engine, "demo-patch")
    assert entry["state"] == "retired" and "packaging installed" in entry["reason"]


def test_retired_from_patch_code(seam: Seam) -> None:
    demo(seam, "def apply(ctx):\n    ctx.setattr(ctx.module, 'VALUE', 5)\n"
         "    ctx.retire('fixed')\n")
    engine = seam.engine()
    assert seam.imported(engine, TARGET, BODY).VALUE == 1
    assert seam.status(engine, "demo-patch")["state"] == "retired"


def test_not_applicable_names_gate_and_version(seam: Seam) -> None:
    demo(seam, requires='packaging = "<1"')
    engine = seam.engine()
    seam.imported(engine, TARGET, BODY)
    entry = seam.status(engine, "demo-patch")
    assert entry["state"] == "not-applicable"
    assert entry["reason"].startswith("packaging ") and entry["reason"].endswith("not in <1")


@pytest.mark.parametrize(("environ", "by"), [
    ({"SGLANG_SHIMS_DISABLE": "demo-patch"}, "SGLANG_SHIMS_DISABLE"),
    ({"SGLANG_SHIMS_PATCH_DEMO_PATCH": "0"}, "SGLANG_SHIMS_PATCH_DEMO_PATCH=0"),
    ({"SGLANG_SHIMS": "0"}, "SGLANG_SHIMS=0"),
])
def test_disabled(seam: Seam, environ: dict[str, str], by: str) -> None:
    demo(seam)
    engine = seam.engine(environ)
    assert seam.imported(engine, TARGET, BODY).VALUE == 1
    entry = seam.status(engine, "demo-patch")
    assert entry == {**entry, "state": "disabled", "reason": f"disabled by {by}"}


def test_default_off_needs_enable(seam: Seam) -> None:
    demo(seam, default="off")
    assert seam.imported(seam.engine(), TARGET, BODY).VALUE == 1
    enabled = seam.engine({"SGLANG_SHIMS_ENABLE": "demo-patch"})
    assert seam.imported(enabled, TARGET, BODY).VALUE == 2


def test_unknown_ids_warned(seam: Seam) -> None:
    demo(seam)
    engine = seam.engine({"SGLANG_SHIMS_DISABLE": "no-such-patch,demo-pach"})
    (warning,) = engine.warnings
    assert warning.startswith("SGLANG_SHIMS_DISABLE names 2 unknown patch ids: 'no-such-patch',"
                              " 'demo-pach' (did you mean demo-patch?)")
    assert sum("unknown patch" in line for line in logged(engine)) == 1


def test_before_phase(seam: Seam) -> None:
    demo(seam, "def apply(ctx):\n    ctx.setattr(ctx.module, 'INJECTED', 'early')\n",
         when="before")
    assert seam.imported(seam.engine(), TARGET, BODY).SEEN_BEFORE == "early"


def test_late_apply_of_before_patch_fails_with_reason(seam: Seam) -> None:
    """``install()`` after the target was imported applies what it can, late; a patch that
    must act before the body ran cannot, and says how to start the process instead."""
    demo(seam, "def apply(ctx):\n    pass\n", when="before")
    seam.imported_stock(TARGET, BODY)  # imported without the shims
    engine = seam.engine()
    engine.patch_imported()
    entry = seam.status(engine, "demo-patch")
    assert entry["state"] == "failed" and "must act before its body runs" in entry["reason"]


def test_late_apply_is_marked_late(seam: Seam) -> None:
    demo(seam)
    module = seam.imported_stock(TARGET, BODY)
    engine = seam.engine()
    engine.patch_imported()
    assert module.VALUE == 2
    entry = seam.status(engine, "demo-patch")
    assert entry["state"] == "applied" and entry["late"] is True
    assert "late" in entry["reason"]


def test_revert_and_apply_again(seam: Seam) -> None:
    demo(seam)
    engine = seam.engine()
    m = seam.imported(engine, TARGET, BODY)
    before = m.VALUE, m.greet("a")
    errors = engine.revert()
    after = m.VALUE, m.greet("a"), seam.status(engine, "demo-patch")["state"]
    engine.reset_reverted()  # what install() does, then:
    engine.patch_imported()
    assert (before, errors, after, m.VALUE) == (
        (2, "hello a!"), [], (1, "hello a", "reverted"), 2)


def test_target_import_error_is_noted(seam: Seam) -> None:
    demo(seam)
    engine = seam.engine()
    with pytest.raises(OSError, match="x"):
        seam.imported(engine, TARGET, "raise OSError('x')\n")
    entry = seam.status(engine, "demo-patch")
    assert entry["state"] == "pending"
    assert entry["notes"] == ["importing shimtarget.mod raised OSError: x"]


def test_world_writable_patch_dir_refused(seam: Seam) -> None:
    demo(seam)
    seam.patches.chmod(0o777)
    engine = seam.engine()
    assert seam.imported(engine, TARGET, BODY).VALUE == 1
    assert any("refused: it is world-writable" in w for w in engine.warnings), engine.warnings
    assert "demo-patch" not in engine.records


def test_reimport_after_patching_is_reported(seam: Seam) -> None:
    demo(seam)
    engine = seam.engine()
    seam.imported(engine, TARGET, BODY)
    again = seam.imported_stock(TARGET, BODY)  # imported anew, around the hook
    assert again.VALUE == 1
    entry = seam.status(engine, "demo-patch")
    assert entry["state"] == "stale" and "imported again" in entry["reason"]


def test_extra_paths_are_vetted(seam: Seam) -> None:
    """SGLANG_SHIMS_PATH: relative, missing and world-writable entries are refused, each
    with a reason; nothing is ever read from the current directory implicitly."""
    good = seam.tmp / "good"
    good.mkdir(mode=0o755)
    loose = seam.tmp / "loose"
    loose.mkdir()
    loose.chmod(0o777)
    value = ":".join(["relative/dir", str(seam.tmp / "missing"), str(loose), str(good), ""])
    roots, warnings = extra_roots(value)
    assert roots == [good]
    assert len(warnings) == 3
    assert "relative" in warnings[0] and "current directory" in warnings[0]
    assert "cannot stat" in warnings[1]
    assert "world-writable" in warnings[2]


def test_refused_extra_folder_named_like_a_builtin_keeps_the_builtin(seam: Seam) -> None:
    """A refused extra folder is reported under its own key; the built-in patch of the same
    name keeps its record (it used to be overwritten with the extra folder's failure)."""
    seam.patch("alloc-conf-env-mirror", TARGET, APPLY_OK)
    (seam.patches / "alloc-conf-env-mirror" / "patch.py").chmod(0o666)  # writable by anyone
    data = seam.engine().status()
    assert data["alloc-conf-env-mirror"]["state"] == "pending", data["alloc-conf-env-mirror"]
    refused = [entry for key, entry in data.items()
               if key != "alloc-conf-env-mirror" and "alloc-conf-env-mirror" in key]
    assert len(refused) == 1 and refused[0]["state"] == "failed"
    assert "refused" in refused[0]["reason"]


def test_the_start_ups_own_warnings_are_logged_with_the_engines(seam: Seam) -> None:
    """``announce(extra)``: what the start-up found (a bad variable, say) is logged with
    the engine's own warnings, and kept among them."""
    engine = seam.engine()
    engine.announce(["SGLANG_SHIMS_X=1 is not a setting"])
    assert "WARNING SGLANG_SHIMS_X=1 is not a setting" in logged(engine)
    assert "SGLANG_SHIMS_X=1 is not a setting" in engine.warnings


def test_the_summary_line_is_logged_once(seam: Seam) -> None:
    engine = seam.engine()
    engine.summarise()
    engine.summarise()
    assert sum(line.startswith("INFO ") and "[origin test, role" in line
               for line in logged(engine)) == 1


def test_strict_mode_stops_the_import_of_a_disabled_required_patch(seam: Seam) -> None:
    demo(seam, policy="required")
    engine = seam.engine({"SGLANG_SHIMS_STRICT": "1", "SGLANG_SHIMS_DISABLE": "demo-patch"})
    with pytest.raises(ImportError, match="patch 'demo-patch' is disabled"):
        seam.imported(engine, TARGET, BODY)


def test_the_process_hears_of_each_decided_patch(seam: Seam) -> None:
    """``on_change`` (the process's report writer) runs when a patch has been decided."""
    demo(seam)
    engine = seam.engine()
    heard: list[str] = []
    engine.on_change = lambda e: heard.append(e.records["demo-patch"].state)
    seam.imported(engine, TARGET, BODY)
    assert heard and heard[-1] == "applied"


PROVIDE = '[[provide]]\nname = "added"\nexported_by = "x"\nremedy = "y"\n'


def test_an_interrupted_patch_forgets_the_names_it_provided(seam: Seam) -> None:
    """Ctrl-C in a patch with ``[[provide]]``: rolled back like a failure, its stand-in
    names with it (status() lists no proxy of a failed patch)."""
    demo(seam, "def apply(ctx):\n    raise KeyboardInterrupt\n", extra=PROVIDE)
    engine = seam.engine()
    with pytest.raises(KeyboardInterrupt):
        seam.imported(engine, TARGET, BODY)
    assert engine.proxies == {}
    assert seam.status(engine, "demo-patch")["state"] == "failed"
