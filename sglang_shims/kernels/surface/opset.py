"""Which MoE and FP8 ``sgl_kernel`` ops each sglang release calls (``data/moe_fp8_ops.json``).

Why: the fallback serves a model only if it implements every kernel op the model's
forward calls; for MoE and FP8 checkpoints that set changes from release to release
(sglang 0.5.5 moved its fused-MoE glue to ``moe_runner``, 0.5.9 calls
``moe_sum_reduce`` from sgl-kernel instead of its own Triton kernel, 0.5.17 adds a
ninth argument to ``moe_align_block_size``).  The data records, per op, the modules that
import it from ``sgl_kernel`` and the shape of every call (positional count and keyword
names), as release spans, read from every release's wheel by
``tools/regen_moe_fp8_opset.py``; docs/fallback-ops.md explains it.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

DATA = Path(__file__).with_name("data") / "moe_fp8_ops.json"
"""The committed file; read through :func:`load` only (regenerated outside the package)."""


@cache
def load() -> dict[str, Any]:
    """``{"releases": [...], "families": {op: family}, "ops": {op: [span, ...]}}``, each
    span ``{"first", "last", "entry": {"modules", "calls", "sglang_triton"}}``."""
    data: dict[str, Any] = json.loads(DATA.read_text(encoding="utf-8"))
    return data


def called(op: str, sglang: str | None) -> bool | None:
    """Whether release ``sglang`` calls ``op`` from ``sgl_kernel``; None where the data
    covers the release or the op not."""
    data = load()
    releases: list[str] = data["releases"]
    if sglang not in releases or op not in data["ops"]:
        return None
    at = releases.index(sglang)
    return any(releases.index(s["first"]) <= at <= releases.index(s["last"])
               for s in data["ops"][op])
