"""Fault injection: every way a patch can go wrong, and what the user sees.

For each scenario, in a fresh interpreter: the application keeps running; the target
module's namespace is identical to a stock import of the same file (compared member by
member, functions by their bytecode); the report names the patch, its state and the
reason; and with ``SGLANG_SHIMS_STRICT=1`` the import fails with an ImportError carrying
that reason (where there is an import to fail).
"""

from __future__ import annotations

import json
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from ..support.packages import manifest_text, write_package, write_patch
from ..support.programs import program
from ..support.run import Result, run_python

TARGET = {
    "shimtarget/__init__.py": "",
    "shimtarget/mod.py": """
        VALUE = 1
        ITEMS = [1, 2]

        def greet(name):
            return "hello " + name

        class Thing:
            size = 3
    """,
    "shimtarget/broken.py": "def oops(:\n",
}

PROBE = program("process/fault_probe")


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


def setup(tmp_path: Path, scenario: Scenario) -> tuple[Path, Path]:
    site = write_package(tmp_path / "site", TARGET)
    patches = tmp_path / "patches"
    write_patch(patches, scenario.patch_id,
                manifest_text(scenario.patch_id, "shimtarget.mod", **scenario.manifest),
                scenario.code)
    for patch_id, code, _ in scenario.extra_patches:
        write_patch(patches, patch_id, manifest_text(patch_id, "shimtarget.mod"), code)
    return site, patches


def run(site: Path, patches: Path, **env: str) -> Result:
    return run_python(PROBE, paths=(site,), env={"SGLANG_SHIMS_PATH": str(patches), **env})


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_fault(tmp_path: Path, scenario: Scenario) -> None:
    site, patches = setup(tmp_path, scenario)
    result = run(site, patches)
    assert result.returncode == 0, result.stderr  # the application keeps running
    data = result.json()
    assert isinstance(data, dict)
    entry = data["status"][scenario.patch_id]
    assert entry["state"] == scenario.state, entry
    assert scenario.reason in entry["reason"], entry["reason"]
    if scenario.state != "applied" and not scenario.extra_patches:
        assert data["identical"], "the target must be exactly as a stock import"
        assert data["greet"] == "hello x"
    if scenario.state in ("failed", "drifted"):
        assert f"{scenario.patch_id}: {scenario.state}" in result.stderr  # reported loudly
    if scenario.extra_patches:  # the first patch (by id) applied, the second was refused
        assert data["status"]["fault-a-first"]["state"] == "applied"

    strict = run(site, patches, SGLANG_SHIMS_STRICT="1")
    if scenario.strict_raises:
        assert strict.returncode == 1
        assert "ImportError: sglang-shims: patch" in strict.stderr
        assert scenario.reason.split(";")[0] in strict.stderr
    else:
        assert strict.returncode == 0, strict.stderr


def test_missing_target_module(tmp_path: Path) -> None:
    """A patch whose target is not installed stays pending at runtime (nothing imports
    it) and `list` says it is not applicable; the application is unaffected."""
    site = write_package(tmp_path / "site", TARGET)
    patches = write_patch(tmp_path / "patches", "fault-missing",
                          manifest_text("fault-missing", "shimtarget.not_there"),
                          "def apply(ctx):\n    pass\n")
    result = run(site, patches, SGLANG_SHIMS_STRICT="1")
    data = result.json()
    assert isinstance(data, dict) and data["identical"]
    assert data["status"]["fault-missing"]["state"] == "pending"
    listing = run_python("from sglang_shims.cli import main; main(['list', '--json'])",
                         paths=(site,), env={"SGLANG_SHIMS_PATH": str(patches)},
                         activate=False)
    entry = next(p for p in json.loads(listing.stdout)["patches"] if p["id"] == "fault-missing")
    assert entry["state"] == "not-applicable"
    assert entry["reason"] == (
        "target module shimtarget.not_there is not installed (no source found)")


@pytest.mark.parametrize(("text", "message"), [
    ("id = = broken", "not valid TOML"),
    (textwrap.dedent(manifest_text("fault-partial", "shimtarget.mod")).split("[retire]")[0],
     "missing required field 'retire'"),
])
def test_malformed_manifest(tmp_path: Path, text: str, message: str) -> None:
    site = write_package(tmp_path / "site", TARGET)
    patches = write_patch(tmp_path / "patches", "fault-partial", text,
                          "def apply(ctx):\n    pass\n")
    write_patch(patches, "fault-good", manifest_text("fault-good", "shimtarget.mod"),
                "def apply(ctx):\n    ctx.setattr(ctx.module, 'VALUE', 2)\n")
    result = run(site, patches)
    assert result.returncode == 0, result.stderr
    data = result.json()
    assert isinstance(data, dict)
    assert data["status"]["fault-good"]["state"] == "applied"  # the others still work
    broken = data["status"]["fault-partial"]
    assert broken["state"] == "failed" and message in broken["reason"]
    assert "patch fault-partial not loaded" in result.stderr
    strict = run(site, patches, SGLANG_SHIMS_STRICT="1")
    assert strict.returncode == 1 and message in strict.stderr
