"""Draw the kernel benchmark's "ours vs AOT" column as an SVG, one row per op.

Why: the raw table of ``benchmarks/kernels.py`` has 150-odd rows; whether an op is behind the
real AOT kernel at decode sizes, at prefill sizes or everywhere is easier to see as dots on
one axis than to read off a column of ratios.  The picture is generated from the committed
results file, never drawn by hand, and ``--check`` (run by the tests) fails when the committed
SVG no longer matches the file it claims to show.

    python benchmarks/plot_kernels.py benchmarks/results/kernels-aot-h200-2026-12-02.md

Only the standard library: the SVG is written as text, with every coordinate formatted to one
decimal so that the output is byte-for-byte reproducible.
"""

from __future__ import annotations

import argparse
import html
import math
import sys
from dataclasses import dataclass
from pathlib import Path

# the wrappers' own line between decode- and prefill-sized launch configurations
from sglang_shims.kernels.runtime import DECODE_ROWS

GOAL = 0.95  # the goal: every op at every size >= 0.95x the AOT kernel
COLOURS = {"decode": "#1f6fb4", "prefill": "#e8710a"}
ROW_H, TOP, LABEL_CHAR_W, RIGHT_W, WIDTH = 22, 96, 6.6, 210, 1100


@dataclass(frozen=True)
class Cell:
    """One row of the raw table: an op at one shape, and AOT time / our time if there is one."""

    op: str
    shape: str
    tokens: int
    ratio: float | None

    @property
    def phase(self) -> str:
        """Decode or prefill, by token count: the two regimes are tuned separately."""
        return "decode" if self.tokens <= DECODE_ROWS else "prefill"


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _ratio(text: str) -> float | None:
    """``1.10x`` -> 1.1; ``-`` (no AOT kernel) -> None.  Anything else is a format change and
    raises, rather than silently dropping a cell from the picture."""
    if text in {"-", ""}:
        return None
    if not text.endswith("x"):
        raise ValueError(f"not a ratio: {text!r}")
    value = float(text[:-1])
    if not value > 0:
        raise ValueError(f"ratio must be positive: {text!r}")
    return value


def parse(text: str) -> list[Cell]:
    """The cells of every table whose header has an "ours vs AOT" column, in table order.

    Tables are found by their header, not by position, so the results file's own summary
    tables (other headers) and the benchmark's other output (PASS lines, warnings, the summary
    lines) are ignored wherever they appear."""
    cells: list[Cell] = []
    columns: dict[str, int] | None = None
    for line in text.splitlines():
        if not line.lstrip().startswith("|"):
            continue
        row = _cells(line)
        if "op" in row and "shape" in row:
            names = {name: i for i, name in enumerate(row)}
            columns = names if "ours vs AOT" in names else None
            continue
        if columns is None or set("".join(row)) <= set("-: ") or len(row) < len(columns):
            continue
        shape = row[columns["shape"]]
        cells.append(Cell(op=row[columns["op"]], shape=shape,
                          tokens=int(shape.split("x", 1)[0]),
                          ratio=_ratio(row[columns["ours vs AOT"]])))
    return cells


def heading(text: str) -> str:
    """The results file's first ``# `` heading (backticks dropped), the picture's title."""
    for line in text.splitlines():
        if line.startswith("# "):
            return line[2:].replace("`", "").strip()
    return "Kernels against the AOT kernel"


def geomean(values: list[float]) -> float:
    """Geometric mean: the right average of ratios (2x and 0.5x average to parity)."""
    return math.exp(sum(math.log(v) for v in values) / len(values))


def _ticks(lo: float, hi: float) -> list[float]:
    """1-2-3-5 steps per decade from ``lo`` to ``hi``, decades only over wide ranges."""
    steps = (1.0, 2.0, 3.0, 5.0) if math.log10(hi / lo) <= 3 else (1.0,)
    out: list[float] = []
    for decade in range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1):
        out.extend(s * 10.0**decade for s in steps)
    return [t for t in out if lo * (1 - 1e-9) <= t <= hi * (1 + 1e-9)]


@dataclass(frozen=True)
class Axis:
    """A log-scale ratio axis from ``lo`` to ``hi`` drawn between pixels ``left`` and ``right``."""

    lo: float
    hi: float
    left: float
    right: float

    def x(self, ratio: float) -> float:
        """Pixel position of a ratio: log scale, so 2x faster and 2x slower are equally far."""
        span = math.log(self.hi) - math.log(self.lo)
        return self.left + (self.right - self.left) * (math.log(ratio) - math.log(self.lo)) / span


def axis_for(ratios: list[float], left: float, right: float) -> Axis:
    """At least 0.1x-3x (the same frame from run to run), widened to a tick beyond the data."""
    lo, hi = min([0.1, *ratios]), max([3.0, *ratios])
    below = [t for t in _ticks(lo / 10, lo) if t <= lo]
    above = [t for t in _ticks(hi, hi * 10) if t >= hi]
    return Axis(lo=below[-1] if below else lo, hi=above[0] if above else hi,
                left=left, right=right)


def _num(value: float) -> str:
    return f"{value:.1f}"


def _text(x: float, y: float, body: str, extra: str = "") -> str:
    return f'<text x="{_num(x)}" y="{_num(y)}"{extra}>{html.escape(body)}</text>'


def _line(x1: float, y1: float, x2: float, y2: float, style: str) -> str:
    return f'<line x1="{_num(x1)}" y1="{_num(y1)}" x2="{_num(x2)}" y2="{_num(y2)}" {style}/>'


def svg(title: str, cells: list[Cell]) -> str:
    """The whole picture as SVG text: deterministic for the same title and cells."""
    measured = [c for c in cells if c.ratio is not None]
    ops = list(dict.fromkeys(c.op for c in measured))
    ratios = [c.ratio for c in measured if c.ratio is not None]
    left = 16 + LABEL_CHAR_W * max([len(op) for op in ops] or [8])
    ax = axis_for(ratios or [1.0], left, WIDTH - RIGHT_W)
    bottom = TOP + ROW_H * len(ops)
    height = bottom + 96
    below = sum(r < GOAL for r in ratios)
    overall = f"{geomean(ratios):.2f}x" if ratios else "n/a"
    subtitle = (f"AOT time / our time, > 1 = ours faster: geometric mean {overall} over "
                f"{len(ratios)} cells; {below} cells below {GOAL:.2f}x (ratios as printed, "
                "2 decimals)")
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
           f'viewBox="0 0 {WIDTH} {height}" role="img" font-family="sans-serif" '
           'font-size="12">',
           f"<title>{html.escape(title)}</title>",
           f'<rect width="{WIDTH}" height="{height}" fill="#ffffff"/>',
           _text(16, 24, title, ' font-size="14" font-weight="bold"'),
           _text(16, 44, subtitle)]
    for i, op in enumerate(ops):
        y = TOP + ROW_H * i
        if i % 2 == 0:
            out.append(f'<rect x="8" y="{y}" width="{WIDTH - 16}" height="{ROW_H}" '
                       'fill="#f3f4f6"/>')
        out.append(_text(left - 8, y + 15, op, ' text-anchor="end"'))
    for t in _ticks(ax.lo, ax.hi):
        out.append(_line(ax.x(t), TOP, ax.x(t), bottom + 4, 'stroke="#d0d4da"'))
        out.append(_text(ax.x(t), bottom + 18, f"{t:g}x", ' text-anchor="middle"'))
    out.append(_line(ax.left, bottom, ax.right, bottom, 'stroke="#333333"'))
    out.append(_text((ax.left + ax.right) / 2, bottom + 36,
                     "AOT time / our time (log scale; > 1 = ours faster)",
                     ' text-anchor="middle"'))
    for ratio, label, style, anchor, dx in (
            (GOAL, f"goal per op {GOAL:.2f}x", 'stroke="#c0392b" stroke-dasharray="4 3"',
             "end", -3),
            (1.0, "parity", 'stroke="#333333"', "start", 3)):
        x = ax.x(ratio)
        out.append(_line(x, TOP - 6, x, bottom, style))
        out.append(_text(x + dx, TOP - 10, label, f' text-anchor="{anchor}"'))
    for cell in measured:
        assert cell.ratio is not None
        cy = TOP + ROW_H * ops.index(cell.op) + ROW_H / 2 + (-4 if cell.phase == "decode" else 4)
        out.append(f'<circle class="dot {cell.phase}" cx="{_num(ax.x(cell.ratio))}" '
                   f'cy="{_num(cy)}" r="4" fill="{COLOURS[cell.phase]}" fill-opacity="0.75">'
                   f"<title>{html.escape(f'{cell.op} {cell.shape}: {cell.ratio:.2f}x')}</title>"
                   "</circle>")
    out.append(_text(ax.right + 16, TOP - 10, "geomean"))
    out.append(_text(ax.right + 80, TOP - 10, "lowest"))
    for i, op in enumerate(ops):
        mine = [c.ratio for c in measured if c.op == op and c.ratio is not None]
        low = min(mine)
        weight = ' fill="#c0392b" font-weight="bold"' if low < GOAL else ""
        out.append(_text(ax.right + 16, TOP + ROW_H * i + 15, f"{geomean(mine):.2f}x"))
        out.append(_text(ax.right + 80, TOP + ROW_H * i + 15, f"{low:.2f}x", weight))
    legend_y = bottom + 60
    for j, phase in enumerate(("decode", "prefill")):
        x = left + 190 * j
        words = (f"decode (<= {DECODE_ROWS} tokens)" if phase == "decode"
                 else f"prefill (> {DECODE_ROWS} tokens)")
        out.append(f'<circle class="legend" cx="{_num(x)}" cy="{legend_y - 4}" r="4" '
                   f'fill="{COLOURS[phase]}"/>')
        out.append(_text(x + 10, legend_y, words))
    missing = list(dict.fromkeys(c.op for c in cells if c.ratio is None))
    if missing:
        out.append(_text(16, legend_y + 24, "no AOT to compare with: " + ", ".join(missing),
                         ' class="footnote"'))
    out.append("</svg>")
    return "\n".join(out) + "\n"


def summary(cells: list[Cell]) -> str:
    """Per op, as a markdown table: the cells timed against the AOT kernel, their geometric
    mean and lowest ratio, and how many are below :data:`GOAL` at decode and at prefill
    sizes (cells without an AOT time are counted apart: not in that kernel, or not run)."""
    ops: dict[str, list[Cell]] = {}
    for cell in cells:
        ops.setdefault(cell.op, []).append(cell)
    lines = ["| op | cells | no AOT time | geomean | lowest | below 0.95x: decode | prefill |",
             "|---|---|---|---|---|---|---|"]
    timed_all: list[float] = []
    for op, found in ops.items():
        timed = [c for c in found if c.ratio is not None]
        if not timed:
            lines.append(f"| {op} | {len(found)} | {len(found)} | - | - | - | - |")
            continue
        low = min(timed, key=lambda c: c.ratio or 0.0)
        below = {phase: sum(1 for c in timed if c.phase == phase and (c.ratio or 0) < GOAL)
                 for phase in ("decode", "prefill")}
        ratios = [c.ratio for c in timed if c.ratio is not None]
        timed_all += ratios
        lines.append(f"| {op} | {len(found)} | {len(found) - len(timed)} | "
                     f"{geomean(ratios):.2f}x | {low.ratio:.2f}x ({low.shape}) | "
                     f"{below['decode']} | {below['prefill']} |")
    if timed_all:
        under = sum(1 for r in timed_all if r < GOAL)
        lines.append(f"| **all** | {len(cells)} | {len(cells) - len(timed_all)} | "
                     f"**{geomean(timed_all):.2f}x** | {min(timed_all):.2f}x | "
                     f"{under} of {len(timed_all)} below | |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write the SVG next to the results file, or with ``--check`` say whether it is stale."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, help="a results file of benchmarks/kernels.py")
    parser.add_argument("--out", type=Path, help="the SVG (default: RESULTS with .svg)")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if the SVG differs from what would be written")
    parser.add_argument("--summary", action="store_true",
                        help="print the per-op summary table (markdown) instead")
    args = parser.parse_args(argv)
    out: Path = args.out or args.results.with_suffix(".svg")
    text = args.results.read_text(encoding="utf-8")
    if args.summary:
        print(summary(parse(text)), end="")
        return 0
    picture = svg(heading(text), parse(text))
    if args.check:
        current = out.read_text(encoding="utf-8") if out.exists() else None
        if current != picture:
            again = f" --out {out}" if args.out else ""
            print(f"{out} is out of date; regenerate with: python benchmarks/plot_kernels.py "
                  f"{args.results}{again}", file=sys.stderr)
            return 1
        return 0
    out.write_text(picture, encoding="utf-8", newline="\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
