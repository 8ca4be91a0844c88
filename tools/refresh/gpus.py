"""The GPU data behind docs/gpus.md: the page and the doctor's copy (``derived``), the kernel
wheels' images (``fetched``), the every-architecture compile check (``measured``: about 1.5
hours on two cores) and sglang's own attention compiled for sm_120 (``fetched``: sglang
wheels, minutes).

Each ``check_*`` is offline and fast: what the file covers against what the repository
asks for today (the limits file's architectures, the kernel releases and sglang releases
the tools name).  Whether the committed compile results are the configurations the launch
rules choose today takes Triton and a minute of enumeration, so the CI test
``tests/kernels/test_compile_every_arch.py`` checks that instead.
"""

from __future__ import annotations

import json
from typing import Any

from .context import Context, log
from .derived import _stale, _write

PAGE_OUTPUTS = ("docs/gpus.md", "sglang_shims/cli/doctor/gpus.json")
COMPILE = "docs/gpus/compile-results.json"
IMAGES = "docs/gpus/kernel-images.json"
ATTENTION = "docs/gpus/sglang-sm120-attention.json"

COMPILE_SOURCE = ("tools/gpus/compile_check.py --sample configs: every launch configuration"
                  " the fallback's wrappers choose, compiled with the installed Triton for"
                  " every architecture of benchmarks/arch_limits.toml (no GPU)")
IMAGES_SOURCE = ("the sgl-kernel / sglang-kernel wheels of tools/gpus/page.py's list: their"
                 " common_ops fatbins, read with sglang_shims.patching.elf")
ATTENTION_SOURCE = ("sglang wheels of the sm120-triton-attention-tiles tests' spread: the"
                    " attention kernels' launches, stock and patched, compiled for sm_120")


def _json(context: Context, rel: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((context.root / rel).read_text(encoding="utf-8"))
    return data


def _arch_names(context: Context) -> list[str]:
    from tools.gpus import limits

    return list(limits.load(context.root / "benchmarks" / "arch_limits.toml"))


# -- docs/gpus.md and the doctor's copy ---------------------------------------------------

def check_page(context: Context) -> list[str]:
    from tools.gpus import page

    return [p for rel, text in page.outputs(context.root).items()
            for p in _stale(context, rel, text)]


def write_page(context: Context) -> None:
    from tools.gpus import page

    for rel, text in page.outputs(context.root).items():
        _write(context, rel, text)


# -- the kernel wheels' images ------------------------------------------------------------

def check_images(context: Context) -> list[str]:
    from tools.gpus import page

    wanted = [f"{dist} {version}" for dist, version in page.kernel_releases(context.root)]
    found = _json(context, IMAGES)["releases"]
    out = [f"{IMAGES}: {name} is not read" for name in wanted if name not in found]
    out += [f"{IMAGES}: {name} has no common_ops library" for name, rel in found.items()
            if not rel["libraries"]]
    return out


def stale_images(context: Context) -> list[str]:
    """Kernel releases on the index newer than every one the page read (the snapshot's
    newest is read by the next ``kernel-images`` run; until then the page is behind)."""
    from packaging.version import Version

    from . import snapshot
    from .fetched import SNAPSHOT

    read = _json(context, IMAGES)["releases"]
    newest = max(Version(name.split()[1]) for name in read)
    listed = snapshot.load(context.root / SNAPSHOT)["projects"]
    return [f"{dist} {v} is on the index, not read for docs/gpus.md (python -m tools.refresh"
            " kernel-images)"
            for dist in ("sgl-kernel", "sglang-kernel")
            for v, e in listed.get(dist, {}).items()
            if e["wheel"] and Version(v) > newest and not Version(v).is_prerelease]


def write_images(context: Context) -> None:
    from tools.gpus import page

    path = context.root / IMAGES
    known = _json(context, IMAGES)["releases"] if path.exists() else {}
    _write(context, IMAGES, page.images_text(page.kernel_releases(context.root), known))


# -- the every-architecture compile check --------------------------------------------------

def check_compile(context: Context) -> list[str]:
    """Every architecture of the limits file is in the results (a row added to the file
    needs a run), as the full configuration sample."""
    found = _json(context, COMPILE)
    out = [f"{COMPILE}: {name} (benchmarks/arch_limits.toml) was not compiled for"
           for name in _arch_names(context) if name not in found["arches"]]
    if found.get("sample") != "configs":
        out.append(f"{COMPILE}: sample {found.get('sample')!r}, not every configuration")
    return out


def stale_compile(context: Context) -> list[str]:
    """The kernels' code or the installed Triton changed since the committed run."""
    from tools.gpus import compile_check

    found = _json(context, COMPILE)
    out = []
    if found.get("sources") != compile_check.sources_digest(context.root):
        out.append(f"{COMPILE}: made from other kernel code (sources"
                   f" {found.get('sources')}); `python -m tools.refresh gpu-compile gpus-page`")
    try:
        from importlib.metadata import version

        triton = version("triton")
    except Exception:  # no Triton here: nothing to compare
        return out
    if triton != found.get("triton"):
        out.append(f"{COMPILE}: made with Triton {found.get('triton')}, {triton} is installed")
    return out


def write_compile(context: Context) -> None:
    from tools.gpus import compile_check

    text = compile_check.results_text(jobs=context.jobs)
    _write(context, COMPILE, text)
    log(f"{COMPILE}: now `python -m tools.refresh gpus-page`")


# -- sglang's attention on sm_120 ---------------------------------------------------------

def check_attention(context: Context) -> list[str]:
    from tests.support.sm120_attention import RELEASES

    found = _json(context, ATTENTION)
    missing = [v for v in RELEASES if v not in found["releases"]]
    return [f"{ATTENTION}: sglang {v} (the patch tests' spread) is not compiled"
            for v in missing]


def write_attention(context: Context) -> None:
    from tools.gpus import sm120_attention

    _write(context, ATTENTION, sm120_attention.text(sm120_attention.report()))
