"""The compatibility matrix (tools/matrix): its runner's reading of wheels, the rendering,
``doctor``'s lookup, and a CI sample of real cells.

The full matrix takes hours (``python -m tools.matrix.run``); CI runs the shims cell with
no kernel and the release's own transformers pin for a few releases that span the patch
ranges, and checks that each still passes as the committed run says.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sglang_shims.cli import doctor
from sglang_shims.cli.doctor.checks import tested
from sglang_shims.engine.gates import Environment
from tools.matrix import render, run

from ..support.run import need
from ..support.stacks import locked_overlay

# A sample that spans the patch ranges, each cell with no kernel installed:
# 0.5.5 stock (fails: the kernel is missing) and with the shims (the fallback serves the
# model: graph and model check pass); 0.5.9 on the newest transformers 5 with the shims
# (the tf5 patches whose range ends at 0.5.9, the last pure-Python release before the
# kernel rename); 0.4.6.post5, the 0.4 release reinforcement-learning frameworks pin, stock
# (triton's removed cache helpers) and with the shims (those helpers, and the fallback
# standing in for a kernel two torch lines older); with the shims 0.4.0 (vllm's and
# sglang's triton helpers, the flashinfer check, outlines' airports from airportsdata; no
# kernel; pinned by such frameworks; its model check runs on vllm's parallel state) and
# 0.4.5 (the deep_gemm stand-in beside the fallback, the flashinfer check, transformers
# 4.48's removed attention class: every patch 0.4.4.post1's cell needs but vllm's, which
# 0.4.0 covers, without installing a second vllm: sglang <= 0.4.4.post1
# require vllm, 0.5 GB with ray and xformers).  Small overlays (< 0.6 GB each, vllm 0.6.4's
# the one large one); about 6 min of CPU on 2 cores.
CI_SAMPLE = [("0.4.0", "pinned", "shims"), ("0.4.5", "pinned", "shims"),
             ("0.4.6.post5", "pinned", "stock"), ("0.4.6.post5", "pinned", "shims"),
             ("0.5.5", "pinned", "stock"), ("0.5.5", "pinned", "shims"),
             ("0.5.9", "newest5", "shims")]


@pytest.mark.wheels
def test_requirements_follow_the_srt_extra_and_leave_the_kernel_out(
        sglang_release: Callable[[str], Path]) -> None:
    # sglang 0.5.1 keeps its runtime under the srt extra (-> runtime_common): its METADATA
    # says transformers==4.55.2 and sgl-kernel==0.3.5, torch==2.8.0 there.
    reqs = {r.name.lower(): str(r.specifier) for r in run.requirements(sglang_release("0.5.1"))}
    assert reqs["transformers"] == "==4.55.2"
    assert reqs["xgrammar"] == "==0.1.23"
    assert reqs["aiohttp"] == ""
    assert reqs["flashinfer_python"] == "==0.2.11.post3"  # kept: some releases import it
    for left_out in ("sgl-kernel", "torch", "torchaudio", "sglang", "pytest",
                     "litellm"):  # the kernel, today's torch, itself, test/other extras
        assert left_out not in reqs


@pytest.mark.wheels
@pytest.mark.parametrize(("release", "expected"), [
    ("0.5.1", {"torch": "2.8.0", "transformers": "4.55.2", "kernel": "0.3.5",
               "kernel_dist": "sgl-kernel"}),
    ("0.5.9", {"torch": "2.9.1", "transformers": "4.57.1", "kernel": "0.3.21",
               "kernel_dist": "sgl-kernel"}),
    ("0.5.10", {"torch": "2.9.1", "kernel": "0.4.1", "kernel_dist": "sglang-kernel"}),
])
def test_pins_read_from_the_wheel(sglang_release: Callable[[str], Path], release: str,
                                  expected: dict[str, str]) -> None:
    # expected values: each release's own pins, written down from its published METADATA
    got = run.pins(sglang_release(release))
    assert {k: got.get(k) for k in expected} == expected


# The resolver's words, as uv printed them in the matrix runs of sglang 0.5.20 (newest
# transformers 5) and 0.5.18 (pinned): a tokenizers pin below what transformers needs, and
# cuda-tile's PyPI placeholder that only downloads from NVIDIA's index.
TOKENIZERS_CONFLICT = (
    "uv pip compile: error: No solution found when resolving dependencies\n  cause: Because"
    " transformers>=5.24.0 depends on tokenizers>=0.23.1,<0.24.0 and you require"
    " tokenizers==0.22.2, we can conclude that your requirements and transformers>=5.24.0 are"
    " incompatible.")
CUDA_TILE_PLACEHOLDER = (
    "this package via\n         ```\n         $ pip install --extra-index-url"
    " https://pypi.nvidia.com/ cuda-tile\n         ```\n\nhint: Build failures usually"
    " indicate a problem with the package or the build environment")

TVM_FFI_REMOVED = (  # sglang 0.5.3.post1: flashinfer-python 0.4.0's pin, gone from PyPI
    "uv pip compile: error: No solution found when resolving dependencies\n  cause: Because"
    " there is no version of apache-tvm-ffi==0.1.0b15 and flashinfer-python==0.4.0 depends on"
    " apache-tvm-ffi==0.1.0b15, we can conclude that flashinfer-python==0.4.0 cannot be used.")

# sglang 0.4.0 (`flashinfer`, published on flashinfer.ai's index only) and 0.4.4.post1
# (xgrammar 0.1.15, deleted from PyPI), as uv words them in the 2026-12-05 run.
FLASHINFER_OWN_INDEX = (
    "cause: Because flashinfer was not found in the package registry and you require"
    " flashinfer>=0.1.6, we can conclude that your requirements are unsatisfiable.")
XGRAMMAR_DELETED = (
    "cause: Because there is no version of xgrammar==0.1.15 and you require"
    " xgrammar==0.1.15, we can conclude that your requirements are unsatisfiable.")


# transformers 5.25.0 (2026-12-01) against sglang's own pins, as uv words it for sglang
# 0.5.17 and 0.5.13, and for 0.5.23 (its tokenizers pin outgrown by 5.25.0's hub).
KERNELS_CONFLICT = (
    "cause: Because transformers>=5.25.0 depends on kernels>=0.19.1,<0.20 and you require"
    " kernels>=0.14.1,<0.15, we can conclude that your requirements and transformers>=5.25.0"
    " are incompatible.")
KERNELS_CONFLICT_DERIVED = (
    "cause: Because transformers>=5.25.0 depends on kernels>=0.19.1,<0.20 and you require"
    " transformers==5.25.0, we can conclude that you require kernels>=0.19.1,<0.20.\n"
    "         And because you require kernels>=0.14.1,<0.15, we can conclude that your"
    " requirements are unsatisfiable.")
HUB_CONFLICT = (
    "cause: Because tokenizers==0.23.2 depends on huggingface-hub>=0.16.4,<2.0 and"
    " transformers>=5.25.0 depends on huggingface-hub>=2.4.0,<3.0, we can conclude that"
    " tokenizers==0.23.2 and transformers>=5.25.0 are incompatible.")


@pytest.mark.parametrize(("error", "done", "expected"), [
    (KERNELS_CONFLICT, [], ["kernels>=0.19.1,<0.20"]),
    (KERNELS_CONFLICT_DERIVED, [], ["kernels>=0.19.1,<0.20"]),
    (HUB_CONFLICT, [], ["tokenizers>=0.23.2"]),
    (TOKENIZERS_CONFLICT, [], ["tokenizers>=0.23.1,<0.24.0"]),
    (CUDA_TILE_PLACEHOLDER, [], ['cuda-tile; sys_platform == "never"']),
    (TVM_FFI_REMOVED, [], ["flashinfer-python==0.4.0rc3"]),
    (FLASHINFER_OWN_INDEX, [], ['flashinfer; sys_platform == "never"']),
    (XGRAMMAR_DELETED, [], ["xgrammar==0.1.17"]),
    (XGRAMMAR_DELETED.replace("0.1.15", "0.1.18"), [], []),  # a published one is no match
    (CUDA_TILE_PLACEHOLDER, ['cuda-tile; sys_platform == "never"'], []),  # no endless retry
    ("uv pip compile: error: No solution found: you require numpy==1.0 and numpy==2.0", [],
     []),  # an unknown conflict stays an environment error
])
def test_pins_replaced_answer_the_resolver(error: str, done: list[str],
                                           expected: list[str]) -> None:
    assert run.replacements(error, done) == expected


@pytest.mark.parametrize(("pins", "expected"), [
    ({"numpy": "1.26.4", "pyarrow": "26.0.1", "transformers": "4.46.3"}, ["pyarrow<26"]),
    ({"numpy": "2.4.6", "pyarrow": "26.0.1", "transformers": "4.46.3"}, []),
    ({"numpy": "1.26.4", "pyarrow": "25.0.1"}, []),
    # sglang 0.4.0's lock: datasets 2.14.4 (outlines 0.0.46) needs a pyarrow before 21,
    # which answers the numpy 1 break too
    ({"numpy": "1.26.4", "pyarrow": "26.0.1", "datasets": "2.14.4"}, ["pyarrow<21"]),
    ({"numpy": "1.26.4", "pyarrow": "25.0.1", "datasets": "2.14.4"}, ["pyarrow<21"]),
    ({"numpy": "1.26.4", "pyarrow": "20.0.0", "datasets": "2.14.4"}, []),
    ({"numpy": "1.26.4", "pyarrow": "25.0.1", "datasets": "2.14.7"}, []),
    ({"transformers": "4.51.1", "compressed-tensors": "0.20.1"}, ["compressed-tensors<0.13"]),
    ({"transformers": "4.53.0", "compressed-tensors": "0.20.1"}, []),
    ({"transformers": "4.51.1", "compressed-tensors": "0.12.2"}, []),
    ({"transformers": "4.51.1"}, []),  # no compressed-tensors at all
])
def test_remedies_follow_the_lock(pins: dict[str, str], expected: list[str]) -> None:
    """A remedy is applied exactly where the resolved pins hold the break it answers."""
    assert [fix for broken, fix, _w, _y in run.REMEDY if broken(pins)] == expected


@pytest.mark.wheels
def test_an_unpinned_transformers_is_taken_as_of_the_release_day(
        sglang_release: Callable[[str], Path]) -> None:
    """0.4.0 names no transformers: its own column is limited to what the index had on
    its upload day (uv's limit is exclusive, so the day after); 0.4.4.post1 pins one."""
    assert "transformers" not in run.pins(sglang_release("0.4.0"))
    assert run.uploaded("0.4.0") == "2024-12-03"
    assert run._day_after("2024-12-31") == "2025-01-01"
    assert run.pins(sglang_release("0.4.4.post1"))["transformers"] == "4.48.3"


def test_page_says_a_left_out_package_in_words() -> None:
    assert render._replaced('cuda-tile; sys_platform == "never"') == "`cuda-tile` left out"
    assert render._replaced("cuda-python>=13") == "`cuda-python>=13`"
    assert render._replaced("+compressed-tensors") == "`compressed-tensors` added"


@pytest.mark.parametrize(("imported", "pins", "done", "expected"), [
    ({"compressed_tensors", "torch"}, {"torch": "2.14.1"}, [], ["compressed-tensors"]),
    # brought by another requirement (vllm 0.7.2 requires it up to 0.4.4.post1)
    ({"compressed_tensors"}, {"compressed-tensors": "0.8.1"}, [], []),
    ({"compressed_tensors"}, {}, ["compressed-tensors"], []),  # added already
    ({"torch"}, {}, [], []),  # not imported
])
def test_undeclared_imports_are_added_where_the_lock_lacks_them(
        imported: set[str], pins: dict[str, str], done: list[str], expected: list[str]) -> None:
    assert run.undeclared(imported, pins, done) == expected


@pytest.mark.wheels
@pytest.mark.parametrize(("release", "adds"), [
    ("0.4.4.post1", False),  # imports no compressed_tensors (vllm's quantization does)
    ("0.4.4.post2", True),  # imports it, declares nothing that brings it
    ("0.4.4.post3", False),  # declares it
])
def test_compressed_tensors_is_added_where_the_release_imports_it_undeclared(
        release: str, adds: bool, sglang_release: Callable[[str], Path]) -> None:
    """Read from the wheels: the requirement is added exactly where the release's own
    requirements resolve to no compressed-tensors and its code imports one."""
    root = sglang_release(release)
    names = {r.name.lower() for r in run.requirements(root)}
    declared = {"compressed-tensors", "vllm"} & names
    # what the lock would hold, to the extent the requirement names decide it
    pins = {name: "0" for name in names}
    pins.update({"compressed-tensors": "0.8.1"} if "vllm" in declared else {})
    assert run.undeclared(run.module_imports(root), pins, []) == \
        (["compressed-tensors"] if adds else [])
    assert ("compressed_tensors" in run.module_imports(root)) == (release != "0.4.4.post1")


@pytest.mark.wheels
@pytest.mark.parametrize("release", ["0.5.18", "0.5.22"])
def test_left_out_cuda_tile_is_not_imported_by_sglang(
        release: str, sglang_release: Callable[[str], Path]) -> None:
    """The run leaves cuda-tile out (see RELAX): honest only while no sglang module of the
    releases that pin it imports ``cuda.tile``."""
    import re

    root = sglang_release(release)
    assert "cuda-tile" in {r.name for r in run.requirements(root)}
    importer = re.compile(r"^\s*(import cuda\.tile|from cuda\.tile|from cuda import .*\btile\b)",
                          re.M)
    found = [str(p.relative_to(root)) for p in (root / "sglang").rglob("*.py")
             if importer.search(p.read_text(encoding="utf-8", errors="replace"))]
    assert found == []


def _run_entry(harness: str, **fields: Any) -> dict[str, Any]:
    return {"date": "2026-12-01", "versions": {"harness": harness,
                                               "sglang_shims_commit": "abc1234"},
            "kernels": {"pinned": "0.3.5", "newer": "0.4.10"},
            "cells": [{"transformers": "pinned", "kernel": "none", "mode": "stock",
                       "graph": {"ok": False}},
                      {"transformers": "newest5", "kernel": "none", "mode": "stock",
                       "env_error": "uv pip compile: no solution"}], **fields}


def test_shims_only_rerun_keeps_stock_cells_only_from_the_same_harness() -> None:
    new = {"kernels": {"pinned": "0.3.5", "newer": "0.4.10"}, "cells": []}
    cell = {"transformers": "pinned", "kernel": "none", "mode": "stock"}
    kept = run._keepable(_run_entry(run.harness()), new, cell)
    assert kept is not None and kept["graph"] == {"ok": False}
    assert kept["kept_from"] == "2026-12-01 abc1234"
    assert run._keepable(_run_entry("0123456789ab"), new, cell) is None  # other probe
    assert run._keepable(None, new, cell) is None
    other_kernels = {"kernels": {"pinned": "0.3.5", "newer": "0.4.11"}, "cells": []}
    assert run._keepable(_run_entry(run.harness()), other_kernels, cell) is None
    replaced = _run_entry(run.harness(), relaxed={"pinned": ["cuda-python>=13"]})
    assert run._keepable(replaced, new, cell) is None  # another environment
    env = {"transformers": "newest5", "kernel": "none", "mode": "stock"}
    assert run._keepable(_run_entry(run.harness()), new, env) is None  # never an env error


def _cell(tf: str, kernel: str, mode: str, **fields: Any) -> dict[str, Any]:
    return {"transformers": tf, "kernel": kernel, "mode": mode, **fields}


GRAPH_OK = {"ok": True, "failed": 0, "of": 21, "first": None}
GRAPH_BAD = {"ok": False, "failed": 21, "of": 21,
             "first": {"module": "sglang.launch_server", "error": "AttributeError: x",
                       "at": "sglang/srt/utils.py:1"}}


@pytest.mark.parametrize(("cell", "verdict"), [
    (_cell("pinned", "none", "shims", graph=GRAPH_OK, model={"ok": True}), "pass"),
    (_cell("pinned", "none", "shims", graph=GRAPH_OK, model={"ok": False, "error": "x"}),
     "fail"),
    (_cell("pinned", "none", "shims", graph=GRAPH_OK, model={"ok": None, "error": "h"}),
     "graph only"),
    (_cell("pinned", "none", "shims", graph=GRAPH_BAD, model={"ok": True}), "fail"),
    (_cell("pinned", "pinned", "shims", graph=GRAPH_OK), "pass"),
    (_cell("pinned", "pinned", "shims", crash="exit -9: Killed"), "fail"),
    (_cell("pinned", "pinned", "shims", env_error="uv pip compile: no solution"), "fail"),
    (_cell("pinned", "newer", "shims", not_run="no kernel newer than the pin"), "not run"),
    (None, "not run"),
])
def test_verdict(cell: dict[str, Any] | None, verdict: str) -> None:
    assert render.verdict(cell) == verdict


def _matrix(**pins: str) -> dict[str, Any]:
    entry = {"date": "2026-12-01", "seconds": 60.0,
             "pins": {"torch": "2.8.0", "transformers": "4.55.2", "kernel": "0.3.5",
                      "kernel_dist": "sgl-kernel", **pins},
             "kernels": {"pinned": "0.3.5", "newer": "0.4.10"},
             "versions": {"torch": "2.14.1+cu130", "python": "3.11.2"},
             "cells": [_cell("pinned", "none", "stock", graph=GRAPH_BAD, model={"ok": False}),
                       _cell("pinned", "none", "shims", graph=GRAPH_OK, model={"ok": True}),
                       _cell("pinned", "newer", "stock", graph=GRAPH_BAD),
                       _cell("pinned", "newer", "shims", graph=GRAPH_BAD)]}
    return {"schema": 1, "index": {"releases": ["0.5.1", "0.5.2"], "transformers5": "5.24.0"},
            "releases": {"0.5.1": entry}}


def _doctor(monkeypatch: pytest.MonkeyPatch, data: dict[str, Any],
            **versions: str | None) -> list[doctor.Finding]:
    monkeypatch.setattr(tested, "matrix", lambda: data)
    env = Environment(versions=dict(versions), capabilities=[], hermetic=True)
    return tested.check_tested(doctor.Facts(env=env))


def test_doctor_says_what_the_matrix_saw(monkeypatch: pytest.MonkeyPatch) -> None:
    data = _matrix()
    (ok,) = _doctor(monkeypatch, data, sglang="0.5.1", transformers="4.55.2", torch="2.14.1")
    assert ok.level == "ok"
    assert "agree with transformers" in ok.detail and "stock it fails" in ok.detail
    (bad,) = _doctor(monkeypatch, data, sglang="0.5.1", transformers="4.55.2",
                     **{"sgl-kernel": "0.4.10"})
    assert bad.level == "warn"
    assert "21 of 21 serving modules failed" in bad.detail and "AttributeError: x" in bad.detail
    assert "4.55.2" in bad.remedy


def test_doctor_says_a_release_newer_than_the_matrix_is_untested(
        monkeypatch: pytest.MonkeyPatch) -> None:
    (finding,) = _doctor(monkeypatch, _matrix(), sglang="0.9.0")
    assert finding.level == "info"
    assert finding.detail.startswith("sglang 0.9.0 is newer than the tested matrix (newest"
                                     " tested: 0.5.1); ")
    assert "patches apply by range" in finding.detail or "patch apply" in finding.detail
    assert "sglang-shims status" in finding.remedy


@pytest.mark.parametrize(("versions", "words"), [
    ({"sglang": "0.5.2"}, "was not run yet"),
    ({"sglang": "0.4.9"}, "is not in the compatibility matrix"),
    ({"sglang": "0.5.1", "transformers": "4.57.0"}, "this exact combination was not run"),
    ({"sglang": "0.5.1", "transformers": "4.55.2", "sgl-kernel": "0.3.8"},
     "this exact combination was not run"),
])
def test_doctor_says_when_a_combination_was_not_run(
        monkeypatch: pytest.MonkeyPatch, versions: dict[str, str], words: str) -> None:
    (finding,) = _doctor(monkeypatch, _matrix(), **versions)
    assert finding.level == "info"
    assert words in finding.detail


def test_doctor_without_sglang_says_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _doctor(monkeypatch, _matrix(), torch="2.14.1") == []


def test_shipped_data_reads_for_every_cell(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every committed cell is something doctor can report (no KeyError on real data)."""
    data = tested.matrix()
    assert data["releases"], "the committed matrix is empty"
    for release, entry in data["releases"].items():
        for cell in entry["cells"]:
            tf = entry["pins"].get("transformers") if cell["transformers"] == "pinned" \
                else entry["versions"].get("transformers5", data["index"]["transformers5"])
            kernel = None if cell["kernel"] == "none" else entry["kernels"][cell["kernel"]]
            versions = {"sglang": release, "transformers": tf, "sgl-kernel": kernel}
            findings = _doctor(monkeypatch, data, **versions)
            assert len(findings) == 1 and findings[0].detail, (release, cell)


def test_rendered_page_is_current() -> None:
    assert render.main(["--check"]) == 0, "run: python -m tools.matrix.render"


def test_render_marks_stock_and_shims() -> None:
    page = render.markdown(_matrix())
    assert "| 0.5.1 | ✗ → ✓ |" in page  # no kernel: stock fails, shims pass
    assert "**Not run yet** (1 of 2 releases): 0.5.2" in page
    picture = render.svg(_matrix())
    assert picture.count("<rect") == 1 + 2 * 6 * 2 + 4  # background, 2 rows x 6 x 2, legend


def test_an_overlay_resolved_earlier_is_recorded_when_the_run_reuses_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A canary that finds the environment already resolved (an earlier, unrecorded run)
    still writes its lock: the tests install the cells' environments from the locks."""
    from sglang_shims.testing import wheels

    folder = tmp_path / "cache" / "matrix" / "0.5.9-tf5.25.0"
    folder.mkdir(parents=True)
    (folder / "lock.txt").write_text("transformers==5.25.0\nkernels==0.19.1\n")
    (folder / "relaxed.txt").write_text('cuda-tile; sys_platform == "never"\n')
    (folder / ".complete").write_text("0.5.9")
    monkeypatch.setattr(wheels, "cache_dir", lambda: tmp_path / "cache")
    monkeypatch.setattr(run, "LOCKS", tmp_path / "locks")
    assert run.overlay("0.5.9", tmp_path, "5.25.0") == folder
    assert not (tmp_path / "locks").exists()  # not asked to record
    run.overlay("0.5.9", tmp_path, "5.25.0", record=True)
    lock = tmp_path / "locks" / "0.5.9-tf5.25.0.txt"
    pins, relaxed, index = run.read_lock(lock)
    assert pins == {"transformers": "5.25.0", "kernels": "0.19.1"} and index == []
    assert relaxed == ['cuda-tile; sys_platform == "never"']


def test_page_names_the_transformers_5_each_release_ran() -> None:
    """A canary that reran only some releases on a new transformers 5: the column is the
    newest one run, and a release still on an older one says which beside its name."""
    data = _matrix()
    data["releases"]["0.5.1"]["versions"]["transformers5"] = "5.24.0"
    data["releases"]["0.5.2"] = copy.deepcopy(data["releases"]["0.5.1"])
    data["releases"]["0.5.2"]["versions"]["transformers5"] = "5.25.0"
    page = render.markdown(data)
    assert "| tf 5.25.0, no kernel |" in page and "5.24.0, no kernel" not in page
    assert "1 of 2 releases ran that column on an older 5.x" in page
    assert "| 0.5.1 (tf 5.24.0) | " in page and "| 0.5.2 | " in page
    assert ">0.5.1*</text>" in render.svg(data) and ">0.5.2</text>" in render.svg(data)
    data["releases"]["0.5.1"]["versions"]["transformers5"] = "5.25.0"
    assert "older 5.x" not in render.markdown(data) and "*" not in render.svg(data)


@pytest.fixture(scope="module")
def sample_data() -> dict[str, Any]:
    return copy.deepcopy(tested.matrix())


@pytest.mark.wheels
@pytest.mark.parametrize(("release", "flavour", "mode"), CI_SAMPLE)
def test_ci_sample(release: str, flavour: str, mode: str, sample_data: dict[str, Any]) -> None:
    """One real cell per line of CI_SAMPLE (no kernel installed), in the environment the
    run recorded (its lock): it ends as the committed run recorded, and with the shims it
    never fails."""
    for module in ("torch", "transformers", "fastapi", "zmq", "uv"):
        need(module)
    from sglang_shims.testing import wheels

    entry = sample_data["releases"].get(release)
    assert entry is not None, f"{release} is missing from the committed matrix"
    recorded = render.verdict(render.cell_of(entry, flavour, "none", mode))
    root = wheels.unpack("sglang", release)
    tf = None if flavour == "pinned" else entry["versions"]["transformers5"]
    extra = locked_overlay(release, root, tf)  # the environment the run recorded
    cell = run._trim(run.run_cell([extra / "site", root], shims=mode == "shims", model=True))
    assert render.verdict(cell) == recorded, json.dumps(cell, indent=1)[-3000:]
    if mode == "shims":
        assert recorded != "fail"
        if entry["kernels"]["pinned"]:  # 0.4.0 has no kernel to stand in for
            assert "sgl-kernel-triton-fallback" in cell["acted"]
    else:
        assert recorded == "fail"


def _probe_function(name: str) -> Callable[..., Any]:
    """One top-level function of the matrix probe (a script, so it cannot be imported)."""
    import ast

    source = run.PROBE.read_text(encoding="utf-8")
    (node,) = [n for n in ast.parse(source).body
               if isinstance(n, ast.FunctionDef) and n.name == name]
    namespace: dict[str, Any] = {"contextlib": __import__("contextlib"),
                                 "dataclasses": __import__("dataclasses")}
    exec(compile(ast.Module(body=[node], type_ignores=[]), str(run.PROBE), "exec"), namespace)
    function: Callable[..., Any] = namespace[name]
    return function


def test_probe_builds_a_msgspec_server_args_without_post_init(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """sglang 0.5.20+ define ServerArgs as a msgspec Struct (``msgspec.defstruct``), where
    ``cls.__new__(cls)`` is refused and ``__post_init__`` (which probes the model and the
    GPU) runs on every construction: the probe must still hand the model check one."""
    import sys
    import types

    msgspec = pytest.importorskip("msgspec")

    def post_init(self: Any) -> None:
        raise AssertionError("__post_init__ ran")

    server_args_cls = msgspec.defstruct(
        "ServerArgs", [("model_path", str), ("tp_size", int, 8), ("device", str, "cuda"),
                       ("attention_backend", str, "flashinfer"), ("dp_size", int, 1),
                       ("pp_size", int, 1), ("page_size", int, 16)],
        namespace={"__post_init__": post_init}, dict=True)
    module = types.ModuleType("sglang.srt.server_args")
    module.ServerArgs = server_args_cls  # type: ignore[attr-defined]
    for name in ("sglang", "sglang.srt"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    monkeypatch.setattr(sys.modules["sglang.srt"], "server_args", module, raising=False)
    monkeypatch.setitem(sys.modules, "sglang.srt.server_args", module)
    sa = _probe_function("server_args")()
    assert isinstance(sa, server_args_cls)
    assert (sa.model_path, sa.device, sa.tp_size, sa.page_size) == ("dummy", "cpu", 1, 1)


def test_cell_processes_the_overlays_pth_files(tmp_path: Path) -> None:
    """A package that puts its modules on sys.path through a ``.pth`` line (nvidia-cutlass-dsl:
    ``nvidia_cutlass_dsl/python_packages``) is importable in a cell, as in a real install."""
    import subprocess
    import sys

    (tmp_path / "vendor" / "inner").mkdir(parents=True)
    (tmp_path / "vendor" / "inner" / "matrix_pth_probe.py").write_text("X = 1\n")
    (tmp_path / "vendor_packages.pth").write_text("vendor/inner\n")
    plain = tmp_path / "plain"
    plain.mkdir()
    assert run.site_pth([plain]) == ""  # nothing to process: the cell's code is unchanged
    code = "import matrix_pth_probe; print(matrix_pth_probe.X)"
    env = {"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"}
    for prefix, importable in (("", False), (run.site_pth([tmp_path, plain]), True)):
        proc = subprocess.run([sys.executable, "-S", "-c", prefix + code], env=env,
                              capture_output=True, text=True, check=False)
        assert (proc.returncode == 0) is importable, proc.stderr[-500:]


def test_shipped_part_answers_as_the_full_data(monkeypatch: pytest.MonkeyPatch) -> None:
    """doctor ships only what its check reads of the matrix: for every committed cell it
    says exactly what it says from the full record (tools/matrix/compatibility.json)."""
    full, shipped = run.load(), tested.matrix()
    assert len(json.dumps(shipped)) < len(json.dumps(full)) / 3
    for release, entry in full["releases"].items():
        for cell in entry["cells"]:
            tf = entry["pins"].get("transformers") if cell["transformers"] == "pinned" \
                else entry["versions"].get("transformers5")
            kernel = None if cell["kernel"] == "none" else entry["kernels"][cell["kernel"]]
            versions = {"sglang": release, "transformers": tf, "sgl-kernel": kernel,
                        "torch": "2.13.0"}
            assert _doctor(monkeypatch, shipped, **versions) == \
                _doctor(monkeypatch, full, **versions), (release, cell)


SDIST_BACKEND = '''\
import base64, hashlib, zipfile

def get_requires_for_build_wheel(config_settings=None):
    return ["sglang-shims-test-never-published"]  # as flashinfer 0.4's asks for torch

def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    name = "sourceonly-1.0-py3-none-any.whl"
    files = {"sourceonly.py": b"BUILT = True\\n",
             "sourceonly-1.0.dist-info/METADATA":
                 b"Metadata-Version: 2.1\\nName: sourceonly\\nVersion: 1.0\\n",
             "sourceonly-1.0.dist-info/WHEEL":
                 b"Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\n"
                 b"Tag: py3-none-any\\n"}
    record = []
    with zipfile.ZipFile(wheel_directory + "/" + name, "w") as out:
        for path, data in files.items():
            out.writestr(path, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            record.append(f"{path},sha256={digest.decode()},{len(data)}")
        record.append("sourceonly-1.0.dist-info/RECORD,,")
        out.writestr("sourceonly-1.0.dist-info/RECORD", "\\n".join(record) + "\\n")
    return name
'''


def test_a_locked_install_resolves_no_build_requirement(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A lock pinning a source-only package (flashinfer-python 0.2-0.4) is built without
    resolving its build requirements: flashinfer 0.4.0rc3's backend asks for an unpinned
    torch, which an isolated build fetched from the index (torch 2.15.0, triton and CUDA
    libraries).  Here, offline, the sdist's backend asks for a name no index has: the
    install succeeds only if nothing is resolved."""
    import tarfile

    need("uv")
    from sglang_shims.testing import wheels

    src = tmp_path / "sourceonly-1.0"
    src.mkdir()
    (src / "backend.py").write_text(SDIST_BACKEND)
    (src / "pyproject.toml").write_text(
        '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n'
        '[project]\nname = "sourceonly"\nversion = "1.0"\n')
    (src / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: sourceonly\nVersion: 1.0\n")
    links = tmp_path / "links"
    links.mkdir()
    with tarfile.open(links / "sourceonly-1.0.tar.gz", "w:gz") as archive:
        archive.add(src, arcname=src.name)
    (tmp_path / "locks").mkdir()
    (tmp_path / "locks" / "9.9.9-pinned.txt").write_text("# test\nsourceonly==1.0\n")
    monkeypatch.setattr(run, "LOCKS", tmp_path / "locks")
    monkeypatch.setattr(run, "BUILDER", ())  # the builder's own pins need the index
    monkeypatch.setattr(wheels, "cache_dir", lambda: tmp_path / "cache")
    for name, value in (("UV_OFFLINE", "1"), ("UV_FIND_LINKS", str(links)),
                        ("UV_CACHE_DIR", str(tmp_path / "uv-cache"))):
        monkeypatch.setenv(name, value)
    folder = run.overlay("9.9.9", tmp_path, None, locked=True)
    assert (folder / "site" / "sourceonly.py").read_text() == "BUILT = True\n"
    assert not (folder / "builder").exists()
    assert (folder / "installed.txt").read_text() == "sourceonly==1.0\n"


def test_probe_leaves_out_a_module_its_package_imports_only_with_an_extra(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A graph module that fails is left out only where its package imported without it
    (0.4.4.post2's ``quantization.gptq`` without vllm); wherever the package imports it, or
    the package itself fails, or the module is not one of ``OPTIONAL``, it stays a failure."""
    import importlib
    import sys

    for name, init in (("optpkg_lazy", ""), ("optpkg_eager", "from . import child\n"),
                       ("optpkg_broken", "raise ImportError('package broken')\n")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text(init)
        (tmp_path / name / "child.py").write_text(
            "raise ImportError('dep is not installed')\n" if name != "optpkg_eager" else "")
    monkeypatch.syspath_prepend(str(tmp_path))
    gap = _probe_function("_optional_gap")
    gap.__globals__.update(importlib=importlib, sys=sys, OPTIONAL={
        "optpkg_lazy.child": "optpkg_lazy", "optpkg_eager.child": "optpkg_eager",
        "optpkg_broken.child": "optpkg_broken"})
    with pytest.raises(ImportError):
        importlib.import_module("optpkg_lazy.child")
    assert gap("optpkg_lazy.child") == ("optpkg_lazy imports here without it (it needs an"
                                        " optional dependency)")
    assert gap("optpkg_eager.child") is None  # its package imports it: a real failure
    assert gap("optpkg_broken.child") is None
    assert gap("optpkg_lazy.other") is None  # not one of OPTIONAL
    for name in [m for m in sys.modules if m.startswith("optpkg_")]:
        monkeypatch.delitem(sys.modules, name)
