"""What a thread block may use on each CUDA architecture, and whether a compiled kernel fits.

The numbers are data (``benchmarks/arch_limits.toml``, each with its source); this module
reads them for the compile check (:mod:`tools.gpus.compile_check`) and the GPU page
(:mod:`tools.gpus.page`), and judges one compiled kernel against one architecture the way
the GPU would: Triton refuses a launch whose shared memory exceeds the opt-in maximum
(``OutOfResources``), and the driver one whose registers times threads exceed the
register file a block may take.  Spilled registers (local memory) still run, slower:
they are reported, not failed.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sglang_shims.kernels.device import Device

REPO = Path(__file__).resolve().parents[2]

LIMITS = REPO / "benchmarks" / "arch_limits.toml"
FIELDS = ("smem_per_block", "regs_per_block", "regs_per_thread", "threads_per_block")


@dataclass(frozen=True)
class ArchLimits:
    """One ``[[arch]]`` row of the limits file."""

    capability: tuple[int, int]
    smem_per_block: int
    regs_per_block: int
    regs_per_thread: int
    threads_per_block: int
    source: str
    """The text of the row's ``[sources]`` entry."""
    example: str
    sm_count: int
    required: bool = True
    """Whether every kernel must compile and fit here (``scope = "probe"``: reported only)."""

    @property
    def cc(self) -> int:
        """The capability as Triton's ``GPUTarget`` takes it: 12.0 -> 120."""
        return self.capability[0] * 10 + self.capability[1]

    @property
    def name(self) -> str:
        return f"sm_{self.cc}"

    def device(self, sm_count: int | None = None) -> Device:
        """The launch rules' view of this architecture (its example GPU's SM count unless
        another is given)."""
        return Device(self.capability, self.smem_per_block,
                      self.sm_count if sm_count is None else sm_count)


def read_toml(path: Path) -> dict[str, Any]:
    """A TOML file (``tomllib``, or ``tomli`` on Python 3.10)."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10 only
        import tomli as tomllib
    data: dict[str, Any] = tomllib.loads(path.read_text(encoding="utf-8"))
    return data


def load(path: Path = LIMITS) -> dict[str, ArchLimits]:
    """``{"sm_120": ArchLimits, ...}`` in the file's order; every row names a known source
    and has every limit."""
    data = read_toml(path)
    sources: dict[str, str] = data["sources"]
    out: dict[str, ArchLimits] = {}
    for row in data["arch"]:
        missing = [f for f in (*FIELDS, "source", "example", "sm_count") if f not in row]
        if missing or row["source"] not in sources:
            raise ValueError(f"{path}: arch {row.get('capability')}: missing {missing} or "
                             f"unknown source {row.get('source')!r}")
        major, minor = (int(p) for p in str(row["capability"]).split("."))
        limits = ArchLimits(capability=(major, minor), **{f: int(row[f]) for f in FIELDS},
                            source=sources[row["source"]], example=str(row["example"]),
                            sm_count=int(row["sm_count"]),
                            required=row.get("scope", "required") != "probe")
        out[limits.name] = limits
    return out


@dataclass(frozen=True)
class Resources:
    """What one compiled kernel asks of a block."""

    shared: int
    """Bytes of shared memory: Triton's dynamic allocation plus any static."""
    regs: int
    """Registers per thread."""
    threads: int
    spill_bytes: int = 0
    """Local memory per thread (spilled registers and stack)."""


def problems(res: Resources, limits: ArchLimits) -> list[str]:
    """Why a kernel with ``res`` cannot launch on ``limits``' architecture (empty: it can)."""
    out = []
    if res.shared > limits.smem_per_block:
        out.append(f"shared memory {res.shared} B > {limits.smem_per_block} B a block")
    if res.threads > limits.threads_per_block:
        out.append(f"{res.threads} threads > {limits.threads_per_block} a block")
    if res.regs > limits.regs_per_thread:
        out.append(f"{res.regs} registers a thread > {limits.regs_per_thread}")
    if res.regs * res.threads > limits.regs_per_block:
        out.append(f"{res.regs} registers x {res.threads} threads = {res.regs * res.threads}"
                   f" > {limits.regs_per_block} a block")
    return out
