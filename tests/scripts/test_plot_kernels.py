"""benchmarks/plot_kernels.py: the SVG of the kernel table is drawn from the table, right.

The picture in benchmarks/README.md claims to show a committed results file; these tests
check that it reads the right cells, places them on a monotonic axis, names what it leaves
out, and that the committed SVG is the one the script generates today."""

from __future__ import annotations

import types
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ..support.scripts import REPO, load_script

RESULTS = "benchmarks/results/kernels-aot-h200-2026-12-02.md"
MODELS = "benchmarks/results/kernels-models-h200-2026-12-05.md"
SVG_NS = "{http://www.w3.org/2000/svg}"

TABLE = """\
# A small run

PASS  rmsnorm bfloat16 1x4096  (max abs error 0.0156)
| op | rows | geomean | every size >= 0.95x |
|---|---|---|---|
| rmsnorm | 2 | 1.50x | met |

| op | shape | bytes | ours µs | eager µs | speedup | AOT µs | ours vs AOT | ours GB/s | % copy | launches ours / eager |
|---|---|---|---|---|---|---|---|---|---|---|
| rmsnorm | 1x4096 | 24.0 KiB | 1.6 | 14.1 | 8.57x | 1.8 | 1.10x | 15 | 0% L2 | 1 / 8 |
warning: moe_align_block_size: single-program path on up to 32 routed tokens
| moe_fused_gate | 8x256 g8 kg4 top8 | 9.5 KiB | 9.5 | 50.2 | 5.29x | not in this kernel | - | 1 | 0% L2 | 1 / 17 |
| rmsnorm | 4096x8192 | 128.0 MiB | 36.5 | 482.7 | 13.24x | 50.2 | 1.38x | 3682 | 86% | 1 / 8 |
| moe_align_block_size | 32x top8 of 128 b64 | 34.3 KiB | 12.6 | 122.5 | 9.74x | 5.2 | 0.42x | 3 | 0% L2 | 3 / 53 |

ours vs AOT (AOT time / our time; > 1 = ours faster): geometric mean 0.86x
  below 0.95x: moe_align_block_size 32x top8 of 128 b64 0.42x
"""  # noqa: E501


@pytest.fixture(scope="module")
def plot() -> types.ModuleType:
    return load_script("benchmarks/plot_kernels.py", "plot_kernels")


def _dots(text: str) -> list[ET.Element]:
    root = ET.fromstring(text)
    return [e for e in root.iter(f"{SVG_NS}circle")
            if e.get("class", "").split()[:1] == ["dot"]]


def test_parse_reads_only_the_aot_table(plot: types.ModuleType) -> None:
    cell = plot.Cell
    assert plot.parse(TABLE) == [
        cell(op="rmsnorm", shape="1x4096", tokens=1, ratio=1.10),
        cell(op="moe_fused_gate", shape="8x256 g8 kg4 top8", tokens=8, ratio=None),
        cell(op="rmsnorm", shape="4096x8192", tokens=4096, ratio=1.38),
        cell(op="moe_align_block_size", shape="32x top8 of 128 b64", tokens=32, ratio=0.42),
    ]
    assert [c.phase for c in plot.parse(TABLE)] == ["decode", "decode", "prefill", "decode"]


def test_svg_has_one_dot_per_ratio_and_names_what_it_leaves_out(
        plot: types.ModuleType) -> None:
    cells = plot.parse(TABLE)
    text = plot.svg(plot.heading(TABLE), cells)
    root = ET.fromstring(text)
    assert root.findtext(f"{SVG_NS}title") == "A small run"
    dots = _dots(text)
    assert len(dots) == sum(c.ratio is not None for c in cells) == 3
    by_title = {d.findtext(f"{SVG_NS}title"): float(d.get("cx", "nan")) for d in dots}
    assert set(by_title) == {"rmsnorm 1x4096: 1.10x", "rmsnorm 4096x8192: 1.38x",
                             "moe_align_block_size 32x top8 of 128 b64: 0.42x"}
    assert by_title["rmsnorm 4096x8192: 1.38x"] > by_title["rmsnorm 1x4096: 1.10x"]
    assert (by_title["rmsnorm 1x4096: 1.10x"]
            > by_title["moe_align_block_size 32x top8 of 128 b64: 0.42x"])
    texts = ["".join(t.itertext()) for t in root.iter(f"{SVG_NS}text")]
    assert "no AOT to compare with: moe_fused_gate" in texts
    assert not any("moe_fused_gate" in t for t in texts if not t.startswith("no AOT"))
    assert "goal per op 0.95x" in texts and "parity" in texts


def test_output_is_deterministic(plot: types.ModuleType) -> None:
    cells = plot.parse(TABLE)
    assert plot.svg("t", cells) == plot.svg("t", list(cells))


@pytest.mark.parametrize("results", [RESULTS, MODELS])
def test_committed_svg_is_current(plot: types.ModuleType, results: str) -> None:
    assert plot.main([str(REPO / results), "--check"]) == 0


def test_summary_counts_each_op_and_the_cells_below_the_goal(plot: types.ModuleType) -> None:
    text = plot.summary(plot.parse(TABLE))
    assert "| rmsnorm | 2 | 0 | 1.23x | 1.10x (1x4096) | 0 | 0 |" in text
    assert "| moe_fused_gate | 1 | 1 | - | - | - | - |" in text
    assert "| moe_align_block_size | 1 | 0 | 0.42x | 0.42x (32x top8 of 128 b64) | 1 | 0 |" in text
    assert "| **all** | 4 | 1 | **0.86x** | 0.42x | 1 of 3 below | |" in text


def test_the_models_summary_in_the_results_file_is_the_scripts(plot: types.ModuleType) -> None:
    """The per-op table quoted in the results file is what ``--summary`` prints from it."""
    text = (REPO / MODELS).read_text(encoding="utf-8")
    assert plot.summary(plot.parse(text)) in text


def test_check_fails_on_a_stale_svg(plot: types.ModuleType, tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "kernels.svg"
    assert plot.main([str(REPO / RESULTS), "--out", str(out)]) == 0
    assert plot.main([str(REPO / RESULTS), "--out", str(out), "--check"]) == 0
    out.write_text(out.read_text(encoding="utf-8").replace("1.12x", "1.13x"), encoding="utf-8")
    capsys.readouterr()
    assert plot.main([str(REPO / RESULTS), "--out", str(out), "--check"]) == 1
    assert "python benchmarks/plot_kernels.py" in capsys.readouterr().err


def test_real_results_file(plot: types.ModuleType) -> None:
    text = (REPO / RESULTS).read_text(encoding="utf-8")
    cells = plot.parse(text)
    measured = [c.ratio for c in cells if c.ratio is not None]
    # the file's summary: 140 cells with an AOT time, geometric mean 1.12x
    assert len(measured) == 140
    assert f"{plot.geomean(measured):.2f}" == "1.12"
    assert len(_dots(plot.svg(plot.heading(text), cells))) == 140


@given(st.lists(st.floats(min_value=1e-6, max_value=1e6), min_size=1, max_size=50))
def test_x_is_monotonic_in_the_ratio(plot: types.ModuleType, ratios: list[float]) -> None:
    axis = plot.axis_for(ratios, 100.0, 900.0)
    xs = [axis.x(r) for r in sorted(ratios)]
    assert xs == sorted(xs)
    assert all(99.999 <= x <= 900.001 for x in xs)
