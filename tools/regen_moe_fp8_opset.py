"""Regenerate ``sglang_shims/kernels/surface/data/moe_fp8_ops.json`` from the wheels.

Reads the unpacked sglang wheels 0.5.1-0.5.17 in the wheel cache
(``sglang_shims.testing.wheels``; unpack them first, which reaches the network) and
records, per MoE or FP8 op, the modules that import it from ``sgl_kernel`` and the shape
of every call (positional count and keyword names), as release spans.  What the data
means is :mod:`sglang_shims.kernels.surface.opset` and docs/fallback-ops.md.  Run from
the repository (about 1.5 minutes)::

    python tools/regen_moe_fp8_opset.py
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run as a script: the package beside this folder
    sys.path.insert(0, str(REPO))

from sglang_shims.kernels.surface import opset  # noqa: E402
from sglang_shims.testing import wheels  # noqa: E402

#: {op: family} -- the MoE and FP8 ops the fallback implements or sglang calls beside them.
OPS: dict[str, str] = {
    "topk_softmax": "moe routing",
    "moe_fused_gate": "moe routing",
    "moe_align_block_size": "moe alignment",
    "moe_sum": "moe reduction",
    "moe_sum_reduce": "moe reduction",
    "prepare_moe_input": "moe experts (cutlass)",
    "shuffle_rows": "moe experts (cutlass)",
    "apply_shuffle_mul_sum": "moe experts (cutlass)",
    "cutlass_fp8_blockwise_scaled_grouped_mm": "moe experts (cutlass)",
    "fused_marlin_moe": "moe experts (marlin)",
    "sgl_per_token_quant_fp8": "fp8 activation quantisation",
    "sgl_per_token_group_quant_fp8": "fp8 activation quantisation",
    "sgl_per_token_group_quant_8bit": "fp8 activation quantisation",
    "sgl_per_tensor_quant_fp8": "fp8 activation quantisation",
    "fp8_scaled_mm": "fp8 matmul (per-tensor/per-channel scales)",
    "fp8_blockwise_scaled_mm": "fp8 matmul (block scales)",
}

#: sglang's own Triton code that does the same job (function, module), checked against
#: the wheels by :func:`build`: where the fallback could route instead of writing a kernel.
SGLANG_TRITON: dict[str, list[str]] = {
    "moe_align_block_size": [],
    "moe_sum_reduce": ["moe_sum_reduce_triton"],
    "moe_sum": ["moe_sum_reduce_triton"],
    "sgl_per_token_group_quant_fp8": ["per_token_group_quant_fp8"],
    "sgl_per_token_group_quant_8bit": ["per_token_group_quant_fp8"],
    "sgl_per_tensor_quant_fp8": ["static_quant_fp8"],
    "sgl_per_token_quant_fp8": ["per_token_group_quant_fp8"],
    "fp8_scaled_mm": ["triton_scaled_mm"],
    "fp8_blockwise_scaled_mm": ["w8a8_block_fp8_matmul_triton", "w8a8_block_fp8_matmul"],
    "moe_fused_gate": ["biased_grouped_topk_impl"],
}


def _call_shape(node: ast.Call) -> str:
    keywords = ",".join(sorted(k.arg or "**" for k in node.keywords))
    return f"{len(node.args)}" + (f"+{keywords}" if keywords else "")


def scan(root: Path) -> dict[str, dict[str, Any]]:
    """{op: {"modules": [...], "calls": [...], "sglang_triton": [...]}} for one release."""
    found: dict[str, dict[str, set[str]]] = {}
    defined: set[tuple[str, str]] = set()
    wanted_defs = {f for fs in SGLANG_TRITON.values() for f in fs}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).parts
        if not (parts[:2] == ("srt", "layers") or parts[0] == "kernels") \
                or any(p in ("test", "tests") for p in parts):
            continue  # the model-serving code paths; not tests, models or entry points
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, OSError):
            continue
        module = ".".join(path.relative_to(root).with_suffix("").parts)
        aliases: dict[str, str] = {}
        strings: set[str] = set()
        registry = False  # sglang >= 0.5.16 names kernels "sgl_kernel:<op>" in a registry
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("sgl_kernel"):
                for a in node.names:
                    if a.name in OPS:
                        aliases[a.asname or a.name] = a.name
                        found.setdefault(a.name, {"modules": set(), "calls": set()})
                        found[a.name]["modules"].add(module)
            elif isinstance(node, ast.FunctionDef) and node.name in wanted_defs:
                defined.add((node.name, module))
            elif isinstance(node, ast.Assign):
                defined.update((t.id, module) for t in node.targets
                               if isinstance(t, ast.Name) and t.id in wanted_defs)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                strings.add(node.value.removeprefix("sgl_kernel:"))
                registry |= node.value.startswith("sgl_kernel:")
        for op in (strings & set(OPS)) if registry else ():
            found.setdefault(op, {"modules": set(), "calls": set()})
            found[op]["modules"].add(module + " (kernel registry)")
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                    and node.func.id in aliases:
                found[aliases[node.func.id]]["calls"].add(_call_shape(node))
    result: dict[str, dict[str, Any]] = {}
    for op, entry in found.items():
        result[op] = {"modules": sorted(entry["modules"]), "calls": sorted(entry["calls"]),
                      "sglang_triton": sorted(f"{m}.{f}" for f, m in defined
                                              if f in SGLANG_TRITON.get(op, []))}
    return result


def build(roots: dict[str, Path]) -> dict[str, Any]:
    """Scan each release's unpacked wheel; identical consecutive entries become one span."""
    from packaging.version import Version

    releases = sorted(roots, key=Version)
    per = {v: scan(roots[v]) for v in releases}
    ops: dict[str, list[dict[str, Any]]] = {}
    for op in OPS:
        spans: list[dict[str, Any]] = []
        for v in releases:
            entry = per[v].get(op)
            if spans and spans[-1]["entry"] == entry:
                spans[-1]["last"] = v
            else:
                spans.append({"first": v, "last": v, "entry": entry})
        ops[op] = [s for s in spans if s["entry"] is not None]
    return {"releases": releases, "families": OPS, "ops": ops}


def main() -> None:
    from packaging.version import Version

    base = wheels.cache_dir() / "unpacked"
    roots = {}
    for folder in sorted(base.glob("sglang-0.5.*")):
        version = folder.name.removeprefix("sglang-")
        v = Version(version)
        if Version("0.5.1") <= v <= Version("0.5.17") and not v.is_prerelease:
            roots[version] = folder / "sglang"
    opset.DATA.write_text(json.dumps(build(roots), indent=1, sort_keys=True) + "\n",
                          encoding="utf-8")


if __name__ == "__main__":
    main()
