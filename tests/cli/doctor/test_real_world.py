"""docs/real-world.md is generated from docs/real-world.json, and the data's claims hold.

For every report that gives the versions it was seen with (``env``): a named patch's
version gates pass there, a named doctor rule fires there (with a remedy), and the
doctor's ABI check fails there with a remedy where the report says it diagnoses it.  A
report marked replayed names a real test, which runs the report's versions on CPU
against the real wheels (tests/patches/).
"""

from __future__ import annotations

import ast
import json
from typing import Any

import pytest

from sglang_shims.catalog.load import load
from sglang_shims.cli import doctor
from sglang_shims.cli.doctor.deep_gemm_facts import DeepGemm
from sglang_shims.engine.gates import check_gate

from ...support.doctor import facts
from ...support.run import REPO
from ...support.scripts import load_script

DATA = json.loads((REPO / "docs" / "real-world.json").read_text(encoding="utf-8"))
REPORTS: list[dict[str, Any]] = DATA["reports"]


def _renderer() -> Any:
    return load_script("docs/real_world.py", "real_world")


def test_page_is_generated_from_the_data() -> None:
    page = (REPO / "docs" / "real-world.md").read_text(encoding="utf-8")
    assert page == _renderer().render(DATA), "run: python docs/real_world.py --write"


def test_counts_on_the_page_are_the_data_s() -> None:
    """Counted here independently of the renderer: the 'all' row of the page."""
    outcomes = ("fixed", "fixed-partly", "diagnosed", "missed", "out-of-scope")
    row = "| all | {} | {} |".format(
        len(REPORTS), " | ".join(str(sum(r["outcome"] == o for r in REPORTS)) for o in outcomes))
    assert row in (REPO / "docs" / "real-world.md").read_text(encoding="utf-8")


def test_every_report_is_well_formed() -> None:
    ids = [r["id"] for r in REPORTS]
    assert len(ids) == len(set(ids))
    patches, rules = load().by_id(), {r.id for r in doctor.rules.RULES}
    for r in REPORTS:
        assert r["kind"] in ("import", "environment", "behaviour"), r["id"]
        assert r["url"].startswith("https://github.com/"), r["id"]
        named = [r["patch"]] if isinstance(r.get("patch"), str) else r.get("patch") or []
        assert all(p in patches for p in named), r["id"]
        assert r.get("rule") is None or r["rule"] in rules, r["id"]
        if r["outcome"] in ("fixed", "fixed-partly"):
            assert r.get("patch"), f"{r['id']}: fixed by which patch?"
        elif r["outcome"] == "diagnosed":
            assert r.get("rule") or r.get("check"), f"{r['id']}: diagnosed by what?"
        else:
            assert r.get("why"), f"{r['id']}: say why not"


@pytest.mark.parametrize("report", [r for r in REPORTS if r.get("env") and r.get("patch")],
                         ids=lambda r: r["id"])
def test_patch_gates_pass_on_the_reports_versions(report: dict[str, Any]) -> None:
    env = facts(report["env"]).env
    named = [report["patch"]] if isinstance(report["patch"], str) else report["patch"]
    for patch in named:
        for gate in load().by_id()[patch].requires:
            ok, why = check_gate(gate, env)
            assert ok, f"{report['id']}: {patch}: {why}"


@pytest.mark.parametrize("report", [r for r in REPORTS if r.get("env") and r.get("rule")
                                    and not r.get("rule_needs")],
                         ids=lambda r: r["id"])
def test_rule_fires_on_the_reports_versions(report: dict[str, Any]) -> None:
    rule = next(x for x in doctor.rules.RULES if x.id == report["rule"])
    fields = dict(report.get("facts", {}))
    if "caps" in fields:  # JSON has lists; compute capabilities are (major, minor) tuples
        fields["caps"] = [tuple(cap) for cap in fields["caps"]]
    if "deep_gemm" in fields:  # where deep_gemm comes from: owners are (dist, version) pairs
        found = dict(fields["deep_gemm"])
        found["owners"] = tuple(tuple(owner) for owner in found.get("owners", ()))
        fields["deep_gemm"] = DeepGemm(**found)
    found = rule.evaluate(facts(report["env"], **fields))
    assert found is not None, report["id"]
    assert found.remedy, report["id"]
    # a fixed report's rule says the patch covers it (warn); a diagnosed one is a problem
    allowed = ("warn",) if report["outcome"] == "fixed" else ("fail", "warn")
    assert found.level in allowed, (report["id"], found.level)


@pytest.mark.parametrize("report", [r for r in REPORTS if r.get("env")
                                    and r.get("check") == "sgl-kernel-abi"],
                         ids=lambda r: r["id"])
def test_abi_check_diagnoses_on_the_reports_versions(report: dict[str, Any]) -> None:
    [found] = doctor.checks.abi.check_abi(facts(report["env"]))
    assert found.level == "fail" and "pip install" in found.remedy, report["id"]


@pytest.mark.parametrize("report", [r for r in REPORTS if r.get("env")
                                    and r.get("check") == "sglang-pin"],
                         ids=lambda r: r["id"])
def test_pin_check_diagnoses_on_the_reports_versions(report: dict[str, Any]) -> None:
    """sglang's Requires-Dist lines (``requires``, copied from the release's METADATA)
    against the installed versions: a warning whose remedy installs the pinned version."""
    from packaging.requirements import Requirement

    pinned = {Requirement(line).name: str(Requirement(line).specifier)
              for line in report["requires"]}
    found = doctor.checks.pins.check_pins(facts(report["env"],
                                                requires={"sglang": report["requires"]}))
    warned = [f for f in found if f.level == "warn"]
    assert warned, (report["id"], found)
    for finding in warned:
        dist = next(d for d in pinned if f" pins {d}" in finding.detail)
        assert f"pip install '{dist}{pinned[dist]}'" in finding.remedy, finding


def test_goals_line_is_counted_from_the_data() -> None:
    """The goal shares, counted here: out-of-scope reports are left out of both."""
    def share(kind: str, outcome: str) -> str:
        mine = [r for r in REPORTS if r["kind"] == kind and r["outcome"] != "out-of-scope"]
        hit = sum(r["outcome"] == outcome for r in mine)
        return f"{hit} of {len(mine)} ({round(100 * hit / len(mine))} %)"

    page = (REPO / "docs" / "real-world.md").read_text(encoding="utf-8")
    assert f"import-time breaks fixed: {share('import', 'fixed')}" in page
    assert f"diagnosed with a remedy: {share('environment', 'diagnosed')}" in page


@pytest.mark.parametrize("report", [r for r in REPORTS if r.get("replay")],
                         ids=lambda r: r["id"])
def test_replayed_reports_name_a_real_test(report: dict[str, Any]) -> None:
    path, _, name = report["replay"].partition("::")
    tree = ast.parse((REPO / path).read_text(encoding="utf-8"))
    assert name in {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}, report["id"]
