"""Compile every fallback kernel, at every launch its wrappers choose, for every CUDA arch.

Why: each kernel of ours was compiled and run on one GPU (the H200, sm_90).  A user on
another GPU is the first to compile it, when their server starts; a configuration that
asks for more shared memory than their GPU gives a block fails there with
``OutOfResources``.  Triton compiles without a GPU, so this finds that out here: the
launches are enumerated by calling the wrappers for each architecture
(:mod:`tools.gpus.launches`), each distinct one is compiled with the installed Triton for
that architecture, and its shared memory, registers and threads are held against the
architecture's limits (:mod:`tools.gpus.limits`, ``benchmarks/arch_limits.toml``).

Which architectures: every row of the limits file, each first probed with a one-line
kernel -- the architectures this Triton (and the ptxas it ships) cannot compile for are
listed as unsupported, with the reason, and not checked further.

Resources: shared memory is Triton's own figure (``metadata.shared``, the number it holds
against the GPU's opt-in maximum before a launch) plus any static shared memory; registers,
static shared memory and local memory (spills, stack) are read from the cubin with the
``cuobjdump`` Triton ships (``--dump-resource-usage``).

Samples (``--sample``), all from the same enumeration:

* ``full`` -- every distinct variant (dtype and divisibility included): about 2800 on an
  sm_90+ architecture, 2000 below;
* ``configs`` -- one variant of every launch configuration (kernel, constexprs, warps,
  stages, options), the heaviest (:func:`configurations`): about 700 / 570; this is the run
  whose result is committed (``docs/gpus/compile-results.json``, written by ``python -m
  tools.refresh gpu-compile``) and shown in docs/gpus.md -- about 1.5 hours on two loaded
  cores, cold;
* ``ci`` -- per kernel the two largest launch shapes and the largest with PDL
  (:func:`largest`), plus the variants the committed full run found asking the most shared
  memory and registers (:func:`with_heaviest`): about 40-55 an architecture, what the CI
  test compiles every run.

Run from the repository (``--jobs`` processes compile in parallel; Triton's cache in
``--cache`` makes a rerun cheap)::

    python -m tools.gpus.compile_check --sample ci
    python -m tools.gpus.compile_check --sample full --json all.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..paths import portable
from . import launches as kernel_launches
from . import limits as gpu_limits
from .launches import Variant
from .limits import REPO, ArchLimits, Resources

# ------------------------------------------------------------------ compiling (in workers)


def _cuobjdump() -> Path:
    import triton  # type: ignore[import-not-found, import-untyped, unused-ignore]

    return Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"


def read_usage(cubin: bytes) -> dict[str, int]:
    """``REG``, ``SHARED``, ``LOCAL``, ``STACK`` of the one function in ``cubin``."""
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        done = subprocess.run([str(_cuobjdump()), "--dump-resource-usage", f.name],
                              capture_output=True, text=True, check=True, timeout=120)
    for line in done.stdout.splitlines():
        if "REG:" in line:
            fields = dict(part.split(":", 1) for part in line.split() if ":" in part)
            return {k: int(fields[k]) for k in ("REG", "SHARED", "LOCAL", "STACK")}
    raise RuntimeError(f"no resource line in cuobjdump's output: {done.stdout!r}")


def compile_one(job: tuple[dict[str, Any], int]) -> dict[str, Any]:
    """Compile one variant for one architecture; its resources, or the error."""
    spec, cc = job
    start = time.monotonic()
    try:
        import importlib

        import triton  # type: ignore[import-not-found, import-untyped, unused-ignore]
        from triton.backends.compiler import GPUTarget  # type: ignore[import-not-found, import-untyped, unused-ignore]
        from triton.compiler import ASTSource  # type: ignore[import-not-found, import-untyped, unused-ignore]

        kernel = getattr(importlib.import_module(spec["module"]), spec["kernel"])
        names = [p.name for p in kernel.params]
        source = ASTSource(
            fn=kernel, signature=spec["signature"],
            constexprs={(names.index(k),): v for k, v in spec["constexprs"].items()},
            attrs={(names.index(k),): v for k, v in spec["attrs"].items()})
        compiled = triton.compile(source, target=GPUTarget("cuda", cc, 32),
                                  options=dict(spec["options"]))
        usage = read_usage(compiled.asm["cubin"])
        return {"shared": int(compiled.metadata.shared) + usage["SHARED"],
                "regs": usage["REG"], "threads": int(compiled.metadata.num_warps) * 32,
                "spill": usage["LOCAL"] + usage["STACK"],
                "seconds": round(time.monotonic() - start, 2)}
    except Exception as exc:  # reported per variant; the run goes on
        text = " | ".join(line for line in str(exc).splitlines() if line.strip())
        return {"error": f"{type(exc).__name__}: {portable(text)[:600]}",
                "seconds": round(time.monotonic() - start, 2)}


def _spec(v: Variant) -> dict[str, Any]:
    return {"module": v.module, "kernel": v.kernel, "signature": v.signature,
            "constexprs": v.constexprs, "attrs": v.attrs, "options": v.options}


# ------------------------------------------------------------------ choosing what to compile


def _config_key(v: Variant) -> str:
    return json.dumps([v.name, v.constexprs, v.options], sort_keys=True, default=str)


def _weight(v: Variant) -> tuple[int, int, int]:
    """Flags on, wider element types, more divisible sizes: the variant of a configuration
    that runs the most code and loads the most per instruction."""
    flags = sum(1 for x in v.constexprs.values() if x is True)
    bits = sum(int("".join(c for c in t if c.isdigit()) or 0) for t in v.signature.values()
               if t.startswith("*"))
    return flags, bits, sum(len(a) for a in v.attrs.values())


def _heaviest(found: Iterable[Variant], key: Callable[[Variant], str]) -> list[Variant]:
    best: dict[str, Variant] = {}
    for v in found:
        k = key(v)
        if k not in best or _weight(v) > _weight(best[k]):
            best[k] = v
    return sorted(best.values(), key=lambda v: (v.name, v.id))


def configurations(found: Iterable[Variant]) -> list[Variant]:
    """One variant per launch configuration (kernel, constexprs, options), the heaviest by
    :func:`_weight`.  The configuration sets a kernel's tiles, warps and stages, which is
    what its shared memory and registers follow; the variants of one configuration differ
    only in element types and in which sizes are multiples of 16."""
    return _heaviest(found, _config_key)


def _size(v: Variant) -> tuple[int, int, int]:
    """Tile elements (the product of the block constexprs), warps, stages."""
    tile = 1
    for name, x in v.constexprs.items():
        if isinstance(x, int) and not isinstance(x, bool) and ("BLOCK" in name
                                                                 or name.endswith("_HEADS")):
            tile *= max(1, x)
    return tile, int(v.options.get("num_warps", 4)), int(v.options.get("num_stages", 3))


def largest(found: Iterable[Variant], per_kernel: int = 2) -> list[Variant]:
    """Per kernel, the ``per_kernel`` largest launch shapes (tile, then warps, then stages;
    flags merged into the heaviest variant), and the largest with PDL on where any is:
    where an architecture runs out of shared memory or registers, these run out first."""
    shapes = _heaviest(found, lambda v: json.dumps(
        [v.name, {k: x for k, x in v.constexprs.items() if not isinstance(x, (bool, float))},
         v.options], sort_keys=True, default=str))
    out: list[Variant] = []
    for name in sorted({v.name for v in shapes}):
        mine = sorted((v for v in shapes if v.name == name), key=_size, reverse=True)
        out += mine[:per_kernel]
        out += [v for v in mine if v.options.get("launch_pdl")][:1]
    return sorted({v.id: v for v in out}.values(), key=lambda v: (v.name, v.id))


RESULTS = REPO / "docs" / "gpus" / "compile-results.json"


def with_heaviest(chosen: list[Variant], found: list[Variant], arch: str) -> list[Variant]:
    """``chosen`` and the variants the committed full run found heaviest on ``arch``
    (:func:`heaviest`) that the rules still choose.  Why both: a kernel's shared memory
    does not follow its tile size alone (Triton stages a reduction or a layout change in
    shared memory for some element types and warp counts: rmsnorm's 16384-wide fp32 row in
    32 warps took 64 KiB on sm_61, the 32768-wide one 8 KiB), so the largest tiles alone
    can miss the configuration that comes closest to a limit."""
    try:
        ids = set(json.loads(RESULTS.read_text(encoding="utf-8")).get("heaviest", {})
                  .get(arch, []))
    except (OSError, ValueError):
        ids = set()
    extra = [v for v in found if v.id in ids]
    return sorted({v.id: v for v in (*chosen, *extra)}.values(), key=lambda v: (v.name, v.id))


def heaviest(results: dict[str, dict[str, Any]], table: dict[str, Any]) -> dict[str, list[str]]:
    """Per architecture and kernel, the variant that asked for the most shared memory and
    the one with the most registers a block (registers x threads), in one run."""
    out: dict[str, list[str]] = {}
    for arch, found in sorted(results.items()):
        best: dict[tuple[str, str], tuple[int, str]] = {}
        for vid, res in sorted(found.items()):
            if "error" in res:
                continue
            kernel = table[vid]["kernel"]
            for what, amount in (("shared", res["shared"]),
                                 ("regs", res["regs"] * res["threads"])):
                if (kernel, what) not in best or amount > best[kernel, what][0]:
                    best[kernel, what] = (amount, vid)
        out[arch] = sorted({vid for _amount, vid in best.values()})
    return out


SAMPLES: dict[str, Callable[[list[Variant]], list[Variant]]] = {
    "full": lambda found: found,
    "configs": configurations,
    "ci": largest,
}


@dataclass
class ArchResult:
    """What one architecture's run found."""

    arch: str
    supported: bool
    reason: str = ""
    variants: int = 0
    compiled: int = 0
    failures: list[dict[str, Any]] | None = None
    over: list[dict[str, Any]] | None = None
    spills: list[dict[str, Any]] | None = None
    peak: dict[str, int] | None = None
    configurations: str = ""
    """:func:`digest` of the configurations the rules choose here."""


def run(arches: list[ArchLimits], sample: str, jobs: int, only: str = ""
        ) -> tuple[list[ArchResult], dict[str, Any], dict[str, dict[str, Any]]]:
    """Enumerate, compile and check; returns per-arch summaries, the variants table and
    ``{arch: {variant id: resources or error}}``."""
    widths = kernel_launches.model_widths()
    keep = (lambda label: only in label) if only else (lambda label: True)
    per_arch: dict[str, list[Variant]] = {}
    digests: dict[str, str] = {}
    table: dict[str, Any] = {}
    for limits in arches:
        found = kernel_launches.variants(limits.device(), widths,
                                         kernel_launches.Specialiser(limits.cc), keep)
        chosen = SAMPLES[sample](found)
        if sample == "ci":
            chosen = with_heaviest(chosen, found, limits.name)
        per_arch[limits.name] = chosen
        digests[limits.name] = digest(configurations(found))
        for v in chosen:
            table.setdefault(v.id, v.as_json())
    probe = _probe_spec()
    spawn = multiprocessing.get_context("spawn")  # a fresh interpreter: no torch, no tensors
    with ProcessPoolExecutor(max_workers=jobs, mp_context=spawn, initializer=_quiet) as pool:
        probes = dict(zip((a.name for a in arches),
                          pool.map(compile_one, [(probe, a.cc) for a in arches]), strict=True))
        work = [(a, v) for a in arches if "error" not in probes[a.name]
                for v in per_arch[a.name]]
        done = pool.map(compile_one, [(_spec(v), a.cc) for a, v in work], chunksize=4)
        results: dict[str, dict[str, Any]] = {a.name: {} for a in arches}
        for (a, v), res in zip(work, done, strict=True):
            results[a.name][v.id] = res
    summaries = [_summarise(a, probes[a.name], per_arch[a.name], results[a.name], table)
                 for a in arches]
    for summary in summaries:
        summary.configurations = digests[summary.arch]
    return summaries, table, results


def digest(chosen: list[Variant]) -> str:
    """What the launch rules choose for an architecture, in one word: committed results
    made under other rules have another (the test says to regenerate them)."""
    return hashlib.sha256(" ".join(sorted(v.id for v in chosen)).encode()).hexdigest()[:16]


def _quiet() -> None:
    """Workers write nothing: Triton prints a failed kernel's whole PTX to stderr, and the
    failure is in the results already."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    os.close(devnull)


TARGETS = (50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 88, 89, 90, 100, 101, 103, 110,
           120, 121, 122)
"""Every compute capability CUDA has named, probed for the page's list of what this Triton
can target (beyond the architectures the limits file checks)."""


def targets() -> dict[str, str]:
    """``{"sm_120": ""}`` where the one-line probe compiles, else the reason.  Each in a
    process of its own: for some names LLVM aborts the process instead of raising."""
    from concurrent.futures import ThreadPoolExecutor

    def one(cc: int) -> str:
        code = (f"import sys, json; sys.path.insert(0, {str(REPO)!r}); "
                "from tools.gpus import compile_check as c; "
                f"print(json.dumps(c.compile_one((c._probe_spec(), {cc}))))")
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=600, check=False)
        lines = done.stdout.strip().splitlines()
        if done.returncode or not lines:
            why = [ln for ln in done.stderr.splitlines() if "ERROR" in ln or "rror" in ln]
            return portable(why[-1] if why else f"exit {done.returncode}").strip()[:300]
        return str(json.loads(lines[-1]).get("error", ""))[:300]

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        return {f"sm_{cc}": why for cc, why in zip(TARGETS, pool.map(one, TARGETS), strict=True)}


def _probe_spec() -> dict[str, Any]:
    return {"module": "tools.gpus.probe", "kernel": "probe",
            "signature": {"x_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
            "constexprs": {"BLOCK": 128}, "attrs": {}, "options": {"num_warps": 4}}


def _summarise(limits: ArchLimits, probe: dict[str, Any], chosen: list[Variant],
               results: dict[str, Any], table: dict[str, Any]) -> ArchResult:
    if "error" in probe:
        return ArchResult(limits.name, False, probe["error"])
    out = ArchResult(limits.name, True, variants=len(chosen), failures=[], over=[], spills=[],
                     peak={"shared": 0, "regs": 0, "threads": 0})
    assert out.failures is not None and out.over is not None and out.spills is not None
    assert out.peak is not None
    for v in chosen:
        res = results[v.id]
        where = {"id": v.id, "kernel": v.name, "call": v.calls[0]}
        if "error" in res:
            out.failures.append({**where, "error": res["error"]})
            continue
        out.compiled += 1
        found = Resources(res["shared"], res["regs"], res["threads"], res["spill"])
        for key in out.peak:
            out.peak[key] = max(out.peak[key], res[key])
        why = gpu_limits.problems(found, limits)
        if why:
            out.over.append({**where, "problems": why, "constexprs": table[v.id]["constexprs"],
                             "options": table[v.id]["options"]})
        if found.spill_bytes:
            out.spills.append({**where, "spill": found.spill_bytes})
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sample", choices=tuple(SAMPLES), default="ci")
    parser.add_argument("--arch", action="append", default=[],
                        help="only these (sm_120 ...; default: every row of the limits file)")
    parser.add_argument("--only", default="", help="only calls whose label contains this")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--cache", type=Path, default=None,
                        help="Triton's cache folder (default: Triton's own)")
    parser.add_argument("--json", type=Path, default=None, help="write everything found here")
    args = parser.parse_args(argv)
    if args.cache is not None:
        os.environ["TRITON_CACHE_DIR"] = str(args.cache)
    limits = gpu_limits.load()
    report = check([limits[a] for a in args.arch] if args.arch else list(limits.values()),
                   args.sample, args.jobs, args.only)
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=1, sort_keys=True) + "\n",
                             encoding="utf-8")
    bad = any(found["failures"] or found["over"] for name, found in report["arches"].items()
              if found["supported"] and limits[name].required)
    return 1 if bad else 0


def check(arches: list[ArchLimits], sample: str, jobs: int, only: str = "") -> dict[str, Any]:
    """One run (:func:`run`), a line per architecture printed, as one JSON document; with
    what this Triton targets unless it is the CI sample."""
    os.environ.pop("TRITON_INTERPRET", None)  # compile for the GPU, never interpret
    start = time.monotonic()
    summaries, table, results = run(arches, sample, jobs, only)
    report = document(summaries, table, results, sample, time.monotonic() - start)
    if sample != "ci":
        report["targets"] = targets()
    for s in summaries:
        print(_line(s), flush=True)
    return report


def results_text(jobs: int) -> str:
    """``docs/gpus/compile-results.json``: every configuration on every architecture of the
    limits file (:func:`committed` of the run)."""
    report = check(list(gpu_limits.load().values()), "configs", jobs)
    return json.dumps(committed(report), indent=1, sort_keys=True) + "\n"


def document(summaries: list[ArchResult], table: dict[str, Any],
             results: dict[str, dict[str, Any]], sample: str, seconds: float) -> dict[str, Any]:
    """The run as one JSON document (the committed results are this)."""
    import triton  # type: ignore[import-not-found, import-untyped, unused-ignore]

    return {"triton": triton.__version__, "sample": sample, "seconds": round(seconds),
            "sources": sources_digest(),
            "arches": {s.arch: {k: v for k, v in vars(s).items() if k != "arch"}
                       for s in summaries},
            "variants": table,
            "resources": {arch: {vid: {k: v for k, v in res.items() if k != "seconds"}
                                 for vid, res in sorted(found.items())}
                          for arch, found in results.items()}}


def sources_digest(root: Path = REPO) -> str:
    """The kernels' code (every module under ``sglang_shims/kernels/ops``: the Triton
    kernels, their launch rules and wrappers) in one word.  What a committed run was
    compiled from; with the Triton version it is what Triton's own cache keys a compiled
    kernel by, so a run is current while both are.  ``python -m tools.refresh --check``
    notes a change (a rerun takes hours; the CI sample compiles the largest configurations
    of the code as it is at every run)."""
    ops = root / "sglang_shims" / "kernels" / "ops"
    h = hashlib.sha256()
    for path in sorted(ops.rglob("*.py")):
        h.update(path.relative_to(ops).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def committed(report: dict[str, Any]) -> dict[str, Any]:
    """What is committed of a run: the per-architecture summaries (verdicts, peaks, what
    failed, went over or spilled, the digest of the configurations), the targets and the
    heaviest variants (what the CI sample adds); the per-variant table and resources (a
    megabyte and more) stay in ``--json`` output."""
    out = {k: v for k, v in report.items() if k not in ("variants", "resources")}
    out["heaviest"] = heaviest(report["resources"], report["variants"])
    return out


def _line(s: ArchResult) -> str:
    if not s.supported:
        return f"{s.arch}: not supported by this Triton ({s.reason[:200]})"
    return (f"{s.arch}: {s.compiled}/{s.variants} compiled, {len(s.failures or [])} failed, "
            f"{len(s.over or [])} over the limits, {len(s.spills or [])} spill; peak {s.peak}")


if __name__ == "__main__":
    sys.exit(main())
