"""Fault injection: every way a patch can go wrong, and what the user sees.

For each scenario, through a real engine in the test's own process: the import goes on;
the target module's namespace is identical to a stock run of the same file (compared
member by member, functions by their bytecode); the record names the patch, its state and
the reason, and the log says it loudly; and with ``SGLANG_SHIMS_STRICT=1`` the import
fails with an ImportError carrying that reason (where there is an import to fail).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import textwrap
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from sglang_shims.testing.inprocess import run_body

from ..support.engine import Seam, logged
from ..support.packages import manifest_text, write_package

TARGET = "shimtarget.mod"
BODY = """
VALUE = 1
ITEMS = [1, 2]

def greet(name):
    return "hello " + name

class Thing:
    size = 3
"""
# on sys.path: the package around the target, and a module that does not parse
PACKAGE = {"shimtarget/__init__.py": "", "shimtarget/broken.py": "def oops(:\n"}


@dataclass
class Scenario:
    name: str
    code: str | None
    state: str
    reason: str
    manifest: dict[str, str] = field(default_factory=dict)
    patch_id: str = "fault-demo"
    strict_raises: bool = True
    extra_patches: list[tuple[str, str, str | None]] = field(default_factory=list)


SCENARIOS = [
    Scenario("raises on the first statement",
             "def apply(ctx):\n    raise ValueError('first statement')\n",
             "failed", "fault-demo/patch.py:2: ValueError: first statement; rolled back"),
    Scenario("raises midway, after one journaled change and direct ones",
             "def apply(ctx):\n    ctx.setattr(ctx.module, 'VALUE', 2)\n"
             "    ctx.module.ITEMS.append(3)\n"
             "    ctx.module.EXTRA = 1\n    raise RuntimeError('midway')\n",
             "failed", "fault-demo/patch.py:5: RuntimeError: midway; rolled back (restored"
             " shimtarget.mod attributes"
             " changed outside the journal: removed EXTRA, restored the contents of ITEMS)"),
    Scenario("a target symbol is missing",
             "def apply(ctx):\n    ctx.wrap(ctx.module, 'no_such_function',"
             " lambda w, i, a, k: w(*a, **k))\n",
             "failed", "AttributeError"),
    Scenario("the target drifted",
             "def apply(ctx):\n    ctx.setattr(ctx.module, 'VALUE', 2)\n",
             "drifted", "anchor not found: 'def greet(name, loud):'",
             manifest={"extra": '[[fingerprint]]\nmodule = "shimtarget.mod"\n'
                                'anchors = ["def greet(name, loud):"]\n'}),
    Scenario("its own code fails to import",
             "import no_such_module_for_sglang_shims\n\ndef apply(ctx):\n    pass\n",
             "failed", "fault-demo/patch.py:1: ModuleNotFoundError: No module named"
             " 'no_such_module_for_sglang_shims'"),
    Scenario("its own code has a syntax error",
             "def apply(ctx) :: pass\n", "failed", "SyntaxError"),
    Scenario("a circular import between patch and target",
             "from shimtarget.mod import VALUE\n\ndef apply(ctx):\n    pass\n",
             "failed", "partially initialized module 'shimtarget.mod'",
             manifest={"when": "before"}),
    Scenario("a retire rule that cannot be evaluated (unparseable module)",
             "def apply(ctx):\n    ctx.note('applied anyway')\n",
             "applied", "in any version",
             manifest={"retire": 'exported = ["shimtarget.broken:oops"]',
                       "requires": 'packaging = ""'},
             strict_raises=False),
    Scenario("a retire check in code that raises",
             "def apply(ctx):\n    import shimtarget.broken\n",
             "failed", "SyntaxError"),
    Scenario("a gate naming an uninstalled distribution",
             "def apply(ctx):\n    ctx.setattr(ctx.module, 'VALUE', 2)\n",
             "not-applicable", "no-such-dist-for-sglang-shims is not installed",
             manifest={"requires": 'no-such-dist-for-sglang-shims = ">=1"'},
             strict_raises=False),
    Scenario("two patches on one symbol",
             "def apply(ctx):\n    ctx.setattr(ctx.module, 'VALUE', 3)\n",
             "failed", "shimtarget.mod.VALUE was already changed by patch 'fault-a-first'",
             patch_id="fault-b-second",
             extra_patches=[("fault-a-first",
                             "def apply(ctx):\n    ctx.setattr(ctx.module, 'VALUE', 2)\n",
                             None)]),
]


def describe(namespace: dict[str, Any]) -> dict[str, Any]:
    """Each member: functions by their bytecode, classes by their names, values by repr."""
    out: dict[str, Any] = {}
    for key, value in namespace.items():
        if key in ("__name__", "__package__", "__loader__", "__spec__", "__builtins__",
                   "__cached__"):
            continue
        if isinstance(value, types.FunctionType):
            out[key] = ["function", value.__qualname__,
                        hashlib.sha256(value.__code__.co_code).hexdigest()]
        elif isinstance(value, type):
            out[key] = ["class", value.__qualname__, sorted(vars(value))]
        else:
            out[key] = ["value", repr(value)]
    return out


def stock_copy(module: types.ModuleType) -> types.ModuleType:
    """The same file run under another name, which nothing watches."""
    spec = importlib.util.spec_from_file_location("stock_copy", module.__file__ or "")
    assert spec is not None
    copy = importlib.util.module_from_spec(spec)
    run_body(copy)
    return copy


@pytest.fixture
def seam_on_path(seam: Seam, monkeypatch: pytest.MonkeyPatch) -> Seam:
    """The seam, with ``shimtarget``'s package (its unparseable module too) on sys.path."""
    site = write_package(seam.tmp / "pkg", PACKAGE)
    monkeypatch.syspath_prepend(str(site))
    for name in ("shimtarget", "shimtarget.broken"):
        seam.isolation.claim(name)
    return seam


def setup(seam: Seam, scenario: Scenario) -> None:
    seam.patch(scenario.patch_id, TARGET, scenario.code, **scenario.manifest)
    for patch_id, code, _ in scenario.extra_patches:
        seam.patch(patch_id, TARGET, code)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_fault(seam_on_path: Seam, scenario: Scenario) -> None:
    seam = seam_on_path
    setup(seam, scenario)
    engine = seam.engine()
    m = seam.imported(engine, TARGET, BODY)  # the import goes on
    entry = seam.status(engine, scenario.patch_id)
    assert entry["state"] == scenario.state, entry
    assert scenario.reason in entry["reason"], entry["reason"]
    if scenario.state != "applied" and not scenario.extra_patches:
        assert describe(vars(m)) == describe(vars(stock_copy(m))), \
            "the target must be exactly as a stock import"
        assert m.greet("x") == "hello x"
    if scenario.state in ("failed", "drifted"):  # reported loudly
        assert any(f"{scenario.patch_id}: {scenario.state}" in line for line in logged(engine))
    if scenario.extra_patches:  # the first patch (by id) applied, the second was refused
        assert seam.status(engine, "fault-a-first")["state"] == "applied"

    strict = seam.engine({"SGLANG_SHIMS_STRICT": "1"})
    if scenario.strict_raises:
        with pytest.raises(ImportError) as caught:
            seam.imported(strict, TARGET, BODY)
        assert str(caught.value).startswith("sglang-shims: patch")
        assert scenario.reason.split(";")[0] in str(caught.value)
    else:
        seam.imported(strict, TARGET, BODY)


def test_missing_target_module(seam_on_path: Seam, monkeypatch: pytest.MonkeyPatch,
                               capsys: pytest.CaptureFixture[str]) -> None:
    """A patch whose target is not installed stays pending at runtime (nothing imports
    it) and `list` says it is not applicable; the application is unaffected."""
    seam = seam_on_path
    seam.patch("fault-missing", "shimtarget.not_there", "def apply(ctx):\n    pass\n")
    engine = seam.engine({"SGLANG_SHIMS_STRICT": "1"})
    m = seam.imported(engine, TARGET, BODY)
    assert describe(vars(m)) == describe(vars(stock_copy(m)))
    assert seam.status(engine, "fault-missing")["state"] == "pending"
    from sglang_shims.cli import main

    monkeypatch.setenv("SGLANG_SHIMS_PATH", str(seam.patches))
    main(["list", "--json"])
    listing = json.loads(capsys.readouterr().out)
    entry = next(p for p in listing["patches"] if p["id"] == "fault-missing")
    assert entry["state"] == "not-applicable"
    assert entry["reason"] == (
        "target module shimtarget.not_there is not installed (no source found)")


@pytest.mark.parametrize(("text", "message"), [
    ("id = = broken", "not valid TOML"),
    (textwrap.dedent(manifest_text("fault-partial", TARGET)).split("[retire]")[0],
     "missing required field 'retire'"),
])
def test_malformed_manifest(seam: Seam, text: str, message: str) -> None:
    seam.patch("fault-partial", TARGET, "def apply(ctx):\n    pass\n", manifest=text)
    seam.patch("fault-good", TARGET, "def apply(ctx):\n    ctx.setattr(ctx.module, 'VALUE', 2)\n")
    engine = seam.engine()
    seam.imported(engine, TARGET, BODY)
    assert seam.status(engine, "fault-good")["state"] == "applied"  # the others still work
    broken = seam.status(engine, "fault-partial")
    assert broken["state"] == "failed" and message in broken["reason"]
    assert any("patch fault-partial not loaded" in line for line in logged(engine))
    with pytest.raises(ImportError, match=message):
        seam.imported(seam.engine({"SGLANG_SHIMS_STRICT": "1"}), TARGET, BODY)


def test_the_stock_copy_is_compared_member_by_member(tmp_path: Path) -> None:
    """The comparison sees a value, a function body and a class changed."""
    base = types.ModuleType("m")
    exec(compile(BODY, "m", "exec"), base.__dict__)
    for change in ("VALUE = 2", "def greet(name):\n    return name", "class Thing:\n    x = 1"):
        other = types.ModuleType("m")
        exec(compile(BODY + change + "\n", "m", "exec"), other.__dict__)
        assert describe(vars(base)) != describe(vars(other)), change
