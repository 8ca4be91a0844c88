"""docs/gpus.md and the doctor's copy of it, rendered from the committed GPU data.

Why generated: the page says, per CUDA architecture, whether the fallback kernels compile
and fit there, which kernel wheels carry code for it and which patches are gated on it;
each of those is measured or read elsewhere, and a page written by hand would drift from
them.  Inputs, all in the repository (rendering reads nothing else, and never the
network), each with the refresh generator that writes it:

* ``benchmarks/arch_limits.toml`` -- the limits, with their sources (written by hand);
* ``docs/gpus/compile-results.json`` -- ``gpu-compile``: every launch configuration
  compiled for every architecture (:mod:`tools.gpus.compile_check`);
* ``docs/gpus/kernel-images.json`` -- ``kernel-images``: the fatbin entries of each kernel
  wheel's ``common_ops`` libraries (:func:`images_text`, reaches the network);
* ``docs/gpus/sglang-sm120-attention.json`` -- ``sglang-sm120-attention``
  (:mod:`tools.gpus.sm120_attention`);
* ``patches/*/manifest.toml`` -- the patches' ``[gpu] capability`` gates.

Outputs: ``docs/gpus.md`` and ``sglang_shims/cli/doctor/gpus.json`` (the installed package
has no docs/; ``doctor`` reads this), generator ``gpus-page``::

    python -m tools.refresh gpus-page        # render both
    python -m tools.refresh kernel-images    # re-read the kernel wheels (downloads)
"""

from __future__ import annotations

import json
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from sglang_shims.catalog.validate import load_text
from sglang_shims.cli.doctor.checks.arch import loader_key
from sglang_shims.engine.gates import satisfies
from sglang_shims.patching.elf import FatbinEntry, arch_names, inspect_library

from . import limits as gpu_limits
from .limits import REPO, ArchLimits

COMPILE = "docs/gpus/compile-results.json"
IMAGES = "docs/gpus/kernel-images.json"
ATTENTION = "docs/gpus/sglang-sm120-attention.json"
PAGE = "docs/gpus.md"
DOCTOR = "sglang_shims/cli/doctor/gpus.json"
"""Paths from the repository's root (the refresh's ``Context.root``)."""

#: The kernel releases read by ``images`` besides the newest of each distribution: the last
#: with sm_75, the first without it, the last and first around the PyPI builds'
#: sm_100a/sm_120a (0.3.9), the first sglang-kernel, the first CUDA 13 default build, and
#: the newest when this was written.
BOUNDARIES = (
    ("sgl-kernel", "0.3.5"), ("sgl-kernel", "0.3.6.post1"), ("sgl-kernel", "0.3.8"),
    ("sgl-kernel", "0.3.9"), ("sglang-kernel", "0.4.0"),
    ("sglang-kernel", "0.4.2"), ("sglang-kernel", "0.4.6.post1"), ("sglang-kernel", "0.4.7"),
    ("sglang-kernel", "0.4.8"), ("sglang-kernel", "0.4.9"),
)


def kernel_releases(root: Path = REPO) -> tuple[tuple[str, str], ...]:
    """:data:`BOUNDARIES` and the newest release of each kernel distribution in the
    refresh's snapshot of the index (the last sgl-kernel, the newest sglang-kernel), so
    that the next refresh reads a new kernel without an edit here."""
    from packaging.version import Version

    from tools.refresh import snapshot

    path = root / "tools" / "refresh" / "data" / "index.json"
    newest = [(dist, v) for dist in ("sgl-kernel", "sglang-kernel")
              for v in [snapshot.newest_final(dist, path)] if v]
    return tuple(sorted(set(BOUNDARIES) | set(newest), key=lambda r: Version(r[1])))


# ------------------------------------------------------------------ reading the wheels


def read_wheel(dist: str, version: str) -> dict[str, Any]:
    """The fatbin entries (kind, arch, flags) of every ``common_ops`` library in the
    published x86_64 wheel, by the folder the loader knows it by (``sm90``, ``sm100``,
    ``""`` for the flat layout of <= 0.3.12)."""
    from sglang_shims.testing import wheels

    wheel = wheels.fetch(dist, version)
    out: dict[str, Any] = {"wheel": wheel.name, "libraries": {}}
    with zipfile.ZipFile(wheel) as archive, tempfile.TemporaryDirectory() as scratch:
        for name in archive.namelist():
            parts = name.split("/")
            if parts[0] != "sgl_kernel" or not parts[-1].startswith("common_ops"):
                continue
            key = parts[1] if len(parts) == 3 else ""
            info = inspect_library(Path(archive.extract(name, scratch)))
            out["libraries"][key] = sorted({(e.kind, e.arch, e.flags) for e in info.entries})
    return out


def images_text(releases: tuple[tuple[str, str], ...] | None = None,
                known: dict[str, Any] | None = None) -> str:
    """``docs/gpus/kernel-images.json`` for ``releases`` (default :func:`kernel_releases`).

    A release already in ``known`` (the committed file's ``releases``) is kept as read: a
    file on the index never changes under its name, and a kernel wheel is 100-400 MB, so
    a refresh downloads only the releases it has not read.  After a change to the reader,
    delete the file and every wheel is read again."""
    known = known or {}
    found = {name: known[name] if name in known else read_wheel(dist, version)
             for dist, version in releases or kernel_releases()
             for name in [f"{dist} {version}"]}
    return json.dumps({"releases": found}, indent=1, sort_keys=True) + "\n"


def entries(raw: list[list[int]]) -> list[FatbinEntry]:
    return [FatbinEntry(kind, arch, flags) for kind, arch, flags in raw]


def image_for(libraries: dict[str, list[list[int]]], cap: tuple[int, int]) -> str:
    """``sass``, ``ptx`` (the driver compiles it at first use) or ``none``: what the
    library sgl_kernel's loader picks on ``cap`` holds for it."""
    key = loader_key(set(libraries), cap)
    if key is None:
        return "none"
    hits = [e for e in entries(libraries[key]) if e.runs_on(cap)]
    return "sass" if any(e.is_sass for e in hits) else "ptx" if hits else "none"


# ------------------------------------------------------------------ the page


def _load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def gated_patches(root: Path = REPO) -> dict[str, str]:
    """``{patch id: capability spec}`` for every patch with a ``[gpu]`` gate."""
    out = {}
    for path in sorted((root / "patches").glob("*/manifest.toml")):
        m = load_text(path.read_text(encoding="utf-8"), str(path.relative_to(root)),
                      folder=path.parent)
        if m.gpu:
            out[m.id] = m.gpu
    return out


def _kib(n: int) -> str:
    return f"{n // 1024} KiB" if n % 1024 == 0 else f"{n / 1024:.1f} KiB"


def verdict(limits: ArchLimits, found: dict[str, Any]) -> str:
    """``fits``, ``fails``, ``unsupported`` (Triton cannot target it) or ``probe`` (compiled
    and reported, nothing required: see the limits file's ``scope``)."""
    if not found["supported"]:
        return "unsupported"
    if not limits.required:
        return "probe"
    return "fails" if found["failures"] or found["over"] else "fits"


def _fallback_cell(limits: ArchLimits, found: dict[str, Any]) -> str:
    v = verdict(limits, found)
    if v == "unsupported":
        return f"Triton cannot target it: {found['reason'][:120]}"
    peak = found["peak"]
    text = (f"{found['compiled']}/{found['variants']} configurations compile; peak "
            f"{_kib(peak['shared'])} shared, {peak['regs']} registers, {peak['threads']} threads")
    if found["over"] or found["failures"]:
        text += f"; **{len(found['over'])} over the limits, {len(found['failures'])} failed**"
    else:
        text += "; all fit"
    if not limits.device().fp8:
        text += "; FP8 ops run on plain torch (no e4m3 in Triton below 8.9)"
    if v == "probe":
        text += " (reported only: outside what sglang and torch's CUDA 13 builds run on)"
    return text


def by_version(releases: dict[str, Any]) -> list[tuple[str, Any]]:
    """``"sgl-kernel 0.3.5"``-keyed entries, oldest release first."""
    from packaging.version import Version

    return sorted(releases.items(), key=lambda item: Version(item[0].split()[1]))


def _images_cell(releases: dict[str, Any], cap: tuple[int, int]) -> str:
    kinds: dict[str, list[str]] = {"sass": [], "ptx": [], "none": []}
    for name, rel in by_version(releases):
        kinds[image_for(rel["libraries"], cap)].append(name.split()[1])
    parts = []
    for kind, label in (("sass", "SASS"), ("ptx", "PTX only"), ("none", "no image")):
        if kinds[kind]:
            parts.append(f"{label}: {', '.join(kinds[kind])}")
    return "; ".join(parts)


def _gates_cell(gates: dict[str, str], cap: tuple[int, int]) -> str:
    hits = [f"`{pid}`" for pid, spec in gates.items() if satisfies(f"{cap[0]}.{cap[1]}", spec)[0]]
    return ", ".join(hits) or "-"


def render(limits: dict[str, ArchLimits], compiled: dict[str, Any], imgs: dict[str, Any],
           attention: dict[str, Any], gates: dict[str, str]) -> str:
    """The page."""
    lines = [
        "# GPUs: where the fallback kernels compile and fit, and which kernel wheels carry code",
        "",
        "<!-- generated by `python -m tools.refresh gpus-page`; edit its inputs, not this"
        " page -->",
        "",
        "sglang-shims' fallback kernels (`SGLANG_SHIMS_ENABLE=sgl-kernel-triton-fallback`) are",
        "Triton, compiled on the user's GPU when the server starts.  Every one of them is",
        "compiled here, without a GPU, for each CUDA architecture below at every launch",
        "configuration its wrappers choose there (the widths of the models sglang serves, odd",
        "widths, decode and prefill row counts, each dtype, PDL on where the GPU has it; of",
        "the variants of one configuration, which differ only in element types and in which",
        "sizes are multiples of 16, the heaviest), and its shared memory, registers and",
        "threads are held against that architecture's",
        f"limits (`tools/gpus/compile_check.py`, Triton {compiled['triton']}, refreshed by",
        "`python -m tools.refresh gpu-compile`; the CI test",
        "`tests/kernels/test_compile_every_arch.py` compiles the largest configurations of",
        "every kernel on every architecture at each run).  Only the H200 (sm_90) has run the",
        "kernels: **on every other architecture their numerics are checked by compilation",
        "and resource limits only.**",
        "",
        "| Arch | Example GPU | Shared memory a block | Fallback kernels | Kernel wheels "
        "(common_ops the loader picks) | Patches gated on it |",
        "|---|---|---|---|---|---|",
    ]
    for name, lim in limits.items():
        found = compiled["arches"][name]
        lines.append(f"| {name} | {lim.example} | {_kib(lim.smem_per_block)} | "
                     f"{_fallback_cell(lim, found)} | "
                     f"{_images_cell(imgs['releases'], lim.capability)} | "
                     f"{_gates_cell(gates, lim.capability)} |")
    lines += ["", *_targets(compiled), "", *_findings(limits, compiled), "",
              *_attention(attention), "", *_wheels(imgs), "", *_limits_table(limits)]
    return "\n".join(lines) + "\n"


def _targets(compiled: dict[str, Any]) -> list[str]:
    """What the installed Triton can compile for at all (a one-line kernel)."""
    found = compiled.get("targets", {})
    ok = [name for name, why in found.items() if not why]
    out = [f"## What Triton {compiled['triton']} targets", "",
           "A one-line kernel, compiled for every compute capability CUDA has named: it",
           f"compiles for {', '.join(sorted(ok, key=lambda a: int(a[3:])))}."]
    for name, why in sorted(found.items(), key=lambda item: int(item[0][3:])):
        if why:
            out.append(f"- {name}: no ({why[:160]})")
    out += ["", "Compiling is not running: torch's CUDA 13 builds and CUDA 13 itself start at",
            "sm_75, and sglang's kernels at sm_75 (sgl-kernel up to 0.3.5) or sm_80."]
    return out


def _findings(limits: dict[str, ArchLimits], compiled: dict[str, Any]) -> list[str]:
    out = ["## What the compile check found", ""]
    for name in limits:
        found = compiled["arches"][name]
        for kind in ("failures", "over"):
            for item in found.get(kind) or []:
                why = item.get("error") or "; ".join(item.get("problems", []))
                out.append(f"- {name}: `{item['kernel']}` ({item['call']}): {why[:200]}")
    spills: dict[str, set[str]] = {}
    for name in limits:
        for item in compiled["arches"][name].get("spills") or []:
            spills.setdefault(item["kernel"], set()).add(name)
    for kernel, arches in sorted(spills.items()):
        out.append(f"- `{kernel}` spills registers to local memory at some configurations "
                   f"on {', '.join(sorted(arches, key=lambda a: int(a[3:])))} (slower, "
                   "not a failure)")
    if len(out) == 2:
        out.append("- nothing: every configuration compiles and fits on every architecture")
    return out


def _attention(data: dict[str, Any]) -> list[str]:
    out = ["## sglang's own Triton attention on sm_120 (`sm120-triton-attention-tiles`)", "",
           "The real prefill/extend attention kernels of each release, with the tiles they",
           "pick on an sm_120, stock and with the patch, compiled for sm_120",
           f"(`python -m tools.refresh sglang-sm120-attention`, Triton {data['triton']}); the",
           f"limit is {data['limit']} B a block.", "",
           "| sglang | kernel | shape | stock tile | stock shared | patched tile | "
           "patched shared |", "|---|---|---|---|---|---|---|"]
    for version, found in data["releases"].items():
        for stock, patched in zip(found["stock"], found["patched"], strict=True):
            def cell(r: dict[str, Any]) -> str:
                mark = " **over**" if r["problems"] else ""
                return f"{r['shared']} B{mark}"
            out.append(f"| {version} | {stock['kernel']} | {stock['shape']} | "
                       f"{stock['tile'][0]}x{stock['tile'][1]} | {cell(stock)} | "
                       f"{patched['tile'][0]}x{patched['tile'][1]} | {cell(patched)} |")
    return out


def _wheels(imgs: dict[str, Any]) -> list[str]:
    out = ["## Kernel wheels read", "",
           "The `common_ops` libraries of each published x86_64 wheel, read with",
           "`sglang_shims.patching.elf` (`python -m tools.refresh kernel-images`).  sgl_kernel's",
           "loader takes `sm90/` on 9.0 and `sm100/` on every other GPU (the flat layout up",
           "to 0.3.12).", "", "| Release | library | SASS | PTX |", "|---|---|---|---|"]
    for name, rel in by_version(imgs["releases"]):
        for key, raw in sorted(rel["libraries"].items()):
            es = entries(raw)
            out.append(f"| {name} | {key or '(flat)'} | {', '.join(arch_names(es)) or '-'} | "
                       f"{', '.join(arch_names(es, ptx=True)) or '-'} |")
    return out


def _limits_table(limits: dict[str, ArchLimits]) -> list[str]:
    out = ["## Limits and their sources", "",
           "From `benchmarks/arch_limits.toml`.", "",
           "| Arch | shared memory a block | registers a block | registers a thread | "
           "threads a block | source |", "|---|---|---|---|---|---|"]
    for name, lim in limits.items():
        out.append(f"| {name} | {lim.smem_per_block} | {lim.regs_per_block} | "
                   f"{lim.regs_per_thread} | {lim.threads_per_block} | {lim.source} |")
    return out


def doctor_data(limits: dict[str, ArchLimits], compiled: dict[str, Any],
                imgs: dict[str, Any]) -> dict[str, Any]:
    """What ``doctor`` reads: per architecture the fallback's verdict and, per kernel
    release read, whether it carries an image."""
    arches = {}
    for name, lim in limits.items():
        found = compiled["arches"][name]
        arches[name] = {"fallback": verdict(lim, found), "fp8_on_triton": lim.device().fp8,
                        "images": {rel: image_for(data["libraries"], lim.capability)
                                   for rel, data in imgs["releases"].items()}}
    return {"source": "docs/gpus.md's data (python -m tools.refresh gpus-page)",
            "triton": compiled["triton"], "arches": arches}


def outputs(root: Path = REPO) -> dict[str, str]:
    """``{path from root: text}`` of the page and the doctor's copy, from the committed
    inputs under ``root``."""
    limits = gpu_limits.load(root / "benchmarks" / "arch_limits.toml")
    compiled, imgs = _load(root / COMPILE), _load(root / IMAGES)
    page = render(limits, compiled, imgs, _load(root / ATTENTION), gated_patches(root))
    doctor = json.dumps(doctor_data(limits, compiled, imgs), indent=1, sort_keys=True) + "\n"
    return {PAGE: page, DOCTOR: doctor}
