"""sglang's own Triton attention kernels compiled for sm_120: stock tiles against patched.

Why: the ``sm120-triton-attention-tiles`` patch changes the tiles sglang's Triton prefill and
extend attention pick on sm_12x (RTX 50xx, RTX PRO 6000, DGX Spark), because the stock ones
are Hopper's and ask for more shared memory than an sm_12x block has.  This compiles the
real kernels of published releases for sm_120 with the tiles each picks, stock and with the
patch, and holds the result against sm_120's limits (``benchmarks/arch_limits.toml``,
``tools/gpus/limits.py``), for a spread of releases in the patch's range.

The harness is the patch's tests' (``tests/support/sm120_attention.py``): the real
``prefill_attention.py`` / ``extend_attention.py`` of a release in a small tree,
``torch.cuda`` told it has an sm_120, the real ``context_attention_fwd`` /
``extend_attention_fwd`` called on CPU tensors, and the launch they make compiled with
``triton.compile`` for sm_120; Triton's ``metadata.shared`` is what it holds against the
GPU's limit before it launches.  Registers need no check here: Triton tells ptxas the
block's threads, so a kernel's registers always fit them (it spills instead).

The releases are one per distinct tile-selection code in the patch's range (the patch
tests' list); the wheels are fetched into the wheel cache (the network, the first time;
a few minutes).  ``python -m tools.refresh sglang-sm120-attention`` writes
``docs/gpus/sglang-sm120-attention.json``; ``python -m tools.gpus.sm120_attention
--release 0.5.16`` prints one release's.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from sglang_shims.testing import wheels
from tests.support import sm120_attention as harness

from . import limits as gpu_limits
from .limits import Resources

RESULTS = "docs/gpus/sglang-sm120-attention.json"
ARCH = "sm_120"
PREFILL_DIMS = (128, 256)
"""Llama-like 128 and Gemma's 256 (the extend shapes are the patch tests')."""


def _row(run: dict[str, Any]) -> dict[str, Any]:
    shape = (f"head dim {run['D']}" if run["kernel"] == "prefill"
             else f"Lq {run['Lq']} / Lv {run['Lv']}")
    return {"kernel": run["kernel"], "shape": shape,
            "tile": [run["BLOCK_M"], run["BLOCK_N"]],
            "num_warps": run.get("num_warps", 4), "num_stages": run.get("num_stages", 3),
            "shared": run["shared"]}


def measure(version: str, scratch: Path) -> dict[str, Any]:
    """Stock and patched launches of ``version``'s attention kernels, compiled for sm_120,
    each with its verdict against sm_120's limits."""
    limits = gpu_limits.load()[ARCH]
    release = wheels.unpack("sglang", version)
    folder = harness.build_tree(release, version, scratch / version, fake_triton=False)
    modules = harness.module_names(release, version)
    out: dict[str, Any] = {"modules": modules}
    for side, stock in (("stock", True), ("patched", False)):
        data = harness.run(folder, modules, "12.0", stock=stock, compile_=True,
                           prefill_dims=PREFILL_DIMS, extend_dims=harness.EXTEND_DIMS)
        runs: list[dict[str, Any]] = data["runs"]  # type: ignore[assignment]  # the harness's JSON
        rows = []
        for run in runs:
            row = _row(run)
            res = Resources(row["shared"], 0, 32 * row["num_warps"])
            row["problems"] = gpu_limits.problems(res, limits)
            rows.append(row)
        out[side] = rows
    return out


def report(releases: tuple[str, ...] = harness.RELEASES) -> dict[str, Any]:
    """Every release's stock and patched launches, with the Triton and the limit."""
    import triton  # type: ignore[import-not-found, import-untyped, unused-ignore]

    limit = gpu_limits.load()[ARCH].smem_per_block
    out: dict[str, Any] = {"triton": triton.__version__, "arch": ARCH, "limit": limit,
                           "releases": {}}
    with tempfile.TemporaryDirectory() as scratch:
        for version in releases:
            out["releases"][version] = found = measure(version, Path(scratch))
            over = sum(1 for r in found["stock"] if r["problems"])
            worst = max(r["shared"] for r in found["patched"])
            print(f"sglang {version}: stock {over}/{len(found['stock'])} launches over "
                  f"{limit} B; patched at most {worst} B", file=sys.stderr, flush=True)
    return out


def text(found: dict[str, Any]) -> str:
    return json.dumps(found, indent=1, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--release", action="append", default=[],
                        help="only these sglang releases (default: the patch tests' spread)")
    args = parser.parse_args(argv)
    print(text(report(tuple(args.release) or harness.RELEASES)), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
