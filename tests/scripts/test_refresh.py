"""``python -m tools.refresh``: one registry of the data generators, its offline check in
CI, the provenance ledger and the pieces the generators share.

The regenerations themselves reach the index or run for hours; what decides their output
is tested here on small inputs, and ``--check`` is run against the committed files.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tools.refresh import __main__ as refresh
from tools.refresh import kernel_exports, ledger, pypi, release_index, snapshot
from tools.refresh.context import Context
from tools.refresh.registry import GENERATORS, PENDING, by_name

from ..support.run import REPO

NOT_GENERATED = {
    "docs/real-world.json": "the judged reports: written by people, rendered into a page",
    "benchmarks/results/sweep-decode-h200-2026-12-02.json": "a GPU measurement",
    "benchmarks/results/e2e-trace-dense-h200-2026-12-05.json": "a GPU measurement (e2e_serve.py"
    " --render re-renders it)",
    "benchmarks/results/e2e-trace-fp8-h200-2026-12-05.json": "a GPU measurement (e2e_serve.py"
    " --render re-renders it)",
    "benchmarks/results/e2e-trace-pdl-dense-h200-2026-12-05.json": "a GPU measurement"
    " (e2e_serve.py --render re-renders it)",
    "benchmarks/results/e2e-trace-pdl-fp8-h200-2026-12-05.json": "a GPU measurement"
    " (e2e_serve.py --render re-renders it)",
}
"""Data files that are inputs (each with why), not outputs of a generator."""


def test_committed_data_is_what_its_generators_wrote(capsys: pytest.CaptureFixture[str]
                                                     ) -> None:
    """The CI gate: offline, in seconds."""
    started = time.monotonic()
    status = refresh.main(["--check"])
    out = capsys.readouterr().out
    assert status == 0, out
    assert time.monotonic() - started < 30, "--check must stay fast"
    assert all(f"{g.name}: ok" in out for g in GENERATORS)


def test_every_data_file_has_a_generator() -> None:
    context = Context()
    outputs = {rel for g in GENERATORS for rel in g.outputs(context)}
    found = {str(p.relative_to(REPO)) for folder in ("sglang_shims", "docs", "tests/data",
                                                     "tools", "benchmarks")
             for pattern in ("*.json", "*.svg", "*.txt", "*.pth", "*.start")
             for p in (REPO / folder).rglob(pattern) if "__pycache__" not in p.parts}
    assert found - outputs - set(NOT_GENERATED) == {str(ledger.LEDGER.relative_to(REPO))}
    assert all((REPO / rel).exists() for rel in outputs)


def test_registry_names_are_unique_and_pending_ones_are_not_registered() -> None:
    names = [g.name for g in GENERATORS]
    assert len(names) == len(set(names))
    assert not set(PENDING) & set(names)
    with pytest.raises(KeyError, match="unknown generator"):
        by_name(["no-such-thing"])
    assert [g.name for g in by_name(["catalog", "index"])] == ["index", "catalog"]


def test_check_names_a_stale_file_and_the_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "tests" / "data").mkdir(parents=True)
    (tmp_path / "tools" / "refresh" / "data").mkdir(parents=True)
    (tmp_path / "tools" / "refresh" / "data" / "index.json").write_text(snapshot.render(
        {"projects": {"sglang": {"0.1.20": {"uploaded": "2024-01-01", "wheel": True},
                                 "0.5.1": {"uploaded": "2025-08-01", "wheel": True},
                                 "0.5.2": {"uploaded": "2025-09-01", "wheel": False}}}}))
    (tmp_path / "tests" / "data" / "sglang_releases.txt").write_text("0.5.1\n0.5.0\n")
    (generator,) = by_name(["releases"])
    context = Context(root=tmp_path)
    assert generator.check(context) == [
        "tests/data/sglang_releases.txt: not what its generator writes"]
    generator.regenerate(context)
    assert (tmp_path / "tests" / "data" / "sglang_releases.txt").read_text() == "0.5.1\n"
    assert generator.check(context) == []


def test_ledger_records_and_checks_provenance(tmp_path: Path) -> None:
    path = tmp_path / "provenance.json"
    out = tmp_path / "data.json"
    out.write_text("{}\n")
    ledger.stamp("thing", 2, "somewhere", "2026-12-04", [out], path=path, root=tmp_path)
    assert ledger.problems("thing", 2, [out], path=path, root=tmp_path) == []
    entry = json.loads(path.read_text())["thing"]
    assert (entry["date"], entry["generator"], entry["source"]) == (
        "2026-12-04", 2, "somewhere")
    ledger.stamp("thing", 2, "somewhere", "2026-12-05", [out], path=path, root=tmp_path)
    assert json.loads(path.read_text())["thing"]["date"] == "2026-12-04"  # nothing changed
    out.write_text('{"a": 1}\n')
    assert ledger.problems("thing", 2, [out], path=path, root=tmp_path) == [
        "data.json: changed since thing wrote it on 2026-12-04"]
    assert ledger.problems("thing", 3, [out], path=path, root=tmp_path)[0] == (
        "thing: written by generator v2, now v3")
    assert ledger.problems("other", 1, [out], path=path, root=tmp_path) == [
        "other: no provenance recorded"]


def test_snapshot_renders_one_line_per_version_and_round_trips() -> None:
    data = {"projects": {"a": {"1.0": {"uploaded": "2026-01-01", "wheel": True}},
                         "b": {}}}
    text = snapshot.render(data)
    assert json.loads(text) == data
    assert '  "1.0": {"uploaded": "2026-01-01", "wheel": true}\n' in text


def test_snapshot_reads_a_folder_of_wheels_as_the_index(tmp_path: Path) -> None:
    (tmp_path / "sglang-0.5.24-py3-none-any.whl").write_bytes(b"x")
    (tmp_path / "sglang_kernel-0.4.11-cp310-abi3-manylinux2014_x86_64.whl").write_bytes(b"y")
    (tmp_path / "notes.txt").write_text("not a distribution")
    found = pypi.listing("sglang", str(tmp_path))
    assert list(found) == ["0.5.24"] and found["0.5.24"].wheels == [
        "sglang-0.5.24-py3-none-any.whl"]
    assert list(pypi.listing("sglang-kernel", f"file://{tmp_path}")) == ["0.4.11"]
    recorded = {"0.5.23": {"uploaded": "2026-11-28", "wheel": True}}
    listed = snapshot.listed(Context(index="none", find_links=[tmp_path]), "sglang", recorded)
    assert list(listed) == ["0.5.23", "0.5.24"]


def test_kernel_exports_reuse_a_wheel_only_when_the_index_serves_the_same_file() -> None:
    previous = {"generated_by": {"inputs": {"wheels": {"0.4.7": {"file": "k.whl",
                                                                  "sha256": "ab"}}}}}
    assert kernel_exports._reusable(previous, "0.4.7", {"k.whl": ("ab", 1)}) is not None
    assert kernel_exports._reusable(previous, "0.4.7", {"k.whl": ("cd", 1)}) is None
    assert kernel_exports._reusable(previous, "0.4.8", {"k.whl": ("ab", 1)}) is None
    assert kernel_exports._reusable(None, "0.4.7", {"k.whl": ("ab", 1)}) is None


def test_release_index_spans_round_trip() -> None:
    order = ["0.1", "0.2", "0.3", "0.4", "0.5"]
    runs = release_index.spans(["0.2", "0.3", "0.5"], order)
    assert runs == [["0.2", "0.3"], ["0.5", "0.5"]]
    assert release_index.expand(runs, order) == {"0.2", "0.3", "0.5"}


def test_canary_report_says_how_releases_were_chosen_and_which_ran() -> None:
    """A spread is not every release, and a chosen release already on the new version is
    not rerun: the report says both, so that "none broke" is read for what it covers."""
    from tools.refresh import canary

    ran = canary.Outcome("0.5.5", "transformers 5.25.0", "none", "shims", "pass (on 5.24.0)",
                         "pass")
    found = [canary.New("transformers", "5.25.0", "2026-12-01", "the matrix ran 5.24.0")]
    text = canary.report(Context(date="2026-12-05"), found, [ran, ran], ["0.5.1", "0.5.5"],
                         canary.how_chosen(None))
    assert ("Releases chosen: 0.5.1, 0.5.5 (a spread: every fourth release, post releases"
            " left out, and the newest;") in text
    assert "Releases whose cells ran: 0.5.5 (a chosen release" in text
    assert "(every release of the matrix)" in canary.report(
        Context(), found, [], ["0.5.1"], canary.how_chosen("all"))
