"""sglang's own Triton attention kernels compiled for sm_120: stock tiles against patched.

Why: the ``sm120-triton-attention-tiles`` patch changes the tiles sglang's Triton prefill and
extend attention pick on sm_12x (RTX 50xx, RTX PRO 6000, DGX Spark), because the stock ones
are Hopper's and ask for more shared memory than an sm_12x block has.  This compiles the
real kernels of published releases for sm_120 with the tiles each picks, stock and with the
patch, and holds the result against sm_120's limits (``benchmarks/arch_limits.toml``,
``tools/gpu_limits.py``), for a spread of releases in the patch's range.

The harness is the patch's own test's (``tests/patches/test_sm120_triton_attention_tiles.py``):
the real ``prefill_attention.py`` / ``extend_attention.py`` of a release in a small tree,
``torch.cuda`` told it has an sm_120, the real ``context_attention_fwd`` /
``extend_attention_fwd`` called on CPU tensors, and the launch they make compiled with
``triton.compile`` for sm_120; Triton's ``metadata.shared`` is what it holds against the
GPU's limit before it launches.  Registers need no check here: Triton tells ptxas the
block's threads, so a kernel's registers always fit them (it spills instead).

Run from the repository (the wheels are fetched into the wheel cache: this reaches the
network the first time; a few minutes)::

    python tools/sglang_sm120_attention.py --write   # docs/gpus/sglang-sm120-attention.json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the tools beside this one

import gpu_limits
from gpu_limits import REPO, Resources

from sglang_shims.testing import wheels

RESULTS = REPO / "docs" / "gpus" / "sglang-sm120-attention.json"
ARCH = "sm_120"
#: Head dims (prefill) and (Lq, Lv) (extend): Llama-like 128, Gemma 256, DeepSeek MHA
#: prefill 192/128, DeepSeek/Kimi MLA absorbed 576/512.
PREFILL_DIMS = (128, 256)
EXTEND_DIMS = ((128, 128), (192, 128), (256, 256), (576, 512))


HARNESS = "tests.patches.test_sm120_triton_attention_tiles"


def _harness() -> Any:
    """The patch's test module (by name: it is the tests', not typed for this tool)."""
    import importlib

    return importlib.import_module(HARNESS)


def releases() -> tuple[str, ...]:
    """One release per distinct tile-selection code in the patch's range (the patch's
    test's list)."""
    return tuple(_harness().RELEASES)


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
    harness = _harness()
    limits = gpu_limits.load()[ARCH]
    release = wheels.unpack("sglang", version)
    folder = harness.build_tree(release, version, scratch / version, fake_triton=False)
    modules = harness.module_names(release, version)
    out: dict[str, Any] = {"modules": modules}
    for side, stock in (("stock", True), ("patched", False)):
        data = harness.run(folder, modules, "12.0", stock=stock, compile_=True,
                           prefill_dims=PREFILL_DIMS, extend_dims=EXTEND_DIMS)
        rows = []
        for run in data["runs"]:
            row = _row(run)
            res = Resources(row["shared"], 0, 32 * row["num_warps"])
            row["problems"] = gpu_limits.problems(res, limits)
            rows.append(row)
        out[side] = rows
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--release", action="append", default=[],
                        help="only these sglang releases (default: the patch test's spread)")
    parser.add_argument("--write", action="store_true", help=f"write {RESULTS}")
    args = parser.parse_args(argv)
    import triton  # type: ignore[import-not-found, import-untyped, unused-ignore]

    limit = gpu_limits.load()[ARCH].smem_per_block
    report: dict[str, Any] = {"triton": triton.__version__, "arch": ARCH, "limit": limit,
                              "releases": {}}
    with tempfile.TemporaryDirectory() as scratch:
        for version in args.release or releases():
            report["releases"][version] = found = measure(version, Path(scratch))
            over = sum(1 for r in found["stock"] if r["problems"])
            worst = max(r["shared"] for r in found["patched"])
            print(f"sglang {version}: stock {over}/{len(found['stock'])} launches over "
                  f"{limit} B; patched at most {worst} B")
    text = json.dumps(report, indent=1, sort_keys=True) + "\n"
    if args.write:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(text, encoding="utf-8")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
