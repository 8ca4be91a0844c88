"""What installing sglang-shims costs on disk: the wheel, and what it puts in a venv.

The wheel is built from a checkout (this one, or ``--tree DIR``: another commit's files,
e.g. ``git archive <commit> | tar -x -C DIR``) and installed into a fresh venv without
dependencies, then byte-compiled as pip does: the installed size is every file its RECORD
lists plus the bytecode written beside them, so that data the runtime never reads shows
up as what it costs a user.

    python benchmarks/size.py [--tree DIR] [--wheel WHEEL] [--json]
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import tempfile
from pathlib import Path

from startup import REPO, build_wheel, make_venv


@dataclasses.dataclass
class Size:
    wheel: str
    wheel_bytes: int
    files: int
    files_bytes: int
    bytecode_bytes: int
    largest: str
    largest_bytes: int

    def line(self) -> str:
        total = self.files_bytes + self.bytecode_bytes
        return (f"wheel {self.wheel}: {self.wheel_bytes / 1e6:.2f} MB; installed:"
                f" {self.files} files, {self.files_bytes / 1e6:.2f} MB + bytecode"
                f" {self.bytecode_bytes / 1e6:.2f} MB = {total / 1e6:.2f} MB; largest file"
                f" {self.largest} ({self.largest_bytes / 1e3:.0f} kB)")


def measure(wheel: Path, venv: Path) -> Size:
    """The distribution's files (its RECORD, less the bytecode pip lists there) and the
    bytecode compiled for them."""
    make_venv(venv, wheel)
    (site,) = (venv / "lib").glob("python*/site-packages")
    (record,) = site.glob("sglang_shims-*.dist-info/RECORD")
    with record.open(newline="", encoding="utf-8") as handle:
        listed = [f for f in (site / row[0] for row in csv.reader(handle) if row) if f.is_file()]
    files = [f for f in listed if f.suffix != ".pyc"]  # pip lists what it compiled too
    bytecode = {c for f in files if f.suffix == ".py"
                for c in (f.parent / "__pycache__").glob(f"{f.stem}.*.pyc")}
    largest = max(files, key=lambda f: f.stat().st_size)
    return Size(wheel.name, wheel.stat().st_size, len(files),
                sum(f.stat().st_size for f in files), sum(c.stat().st_size for c in bytecode),
                str(largest.relative_to(site)), largest.stat().st_size)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", type=Path, default=REPO, help="the checkout to build")
    parser.add_argument("--wheel", type=Path, help="measure this wheel instead of building")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sglang-shims-size-") as folder:
        tmp = Path(folder)
        size = measure(args.wheel or build_wheel(tmp / "dist", args.tree), tmp / "venv")
    print(json.dumps(dataclasses.asdict(size), indent=1) if args.json else size.line())


if __name__ == "__main__":
    main()
