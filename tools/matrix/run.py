"""Run the compatibility matrix: sglang releases x transformers x kernel x (stock, shims).

Usage (from the repository root, in the test environment: torch, transformers' pin of
sglang 0.5.1, ``tests/requirements/serving.txt``, and ``uv`` on PATH)::

    python -m tools.matrix.run                       # every release from 0.5.1 (hours)
    python -m tools.matrix.run --releases 0.5.1,0.5.9 --jobs 2
    python -m tools.matrix.render                    # docs/compatibility.{md,svg}

Each release gets the environment it declares: its ``Requires-Dist`` (the ``srt`` extra up
to 0.5.2) is resolved by ``uv pip compile`` with today's torch, torchvision and triton as
overrides (``--override``: the skew under test), and once with the newest transformers 5
as well.  What differs from this environment is installed with ``uv pip install --target``
into a folder of the wheel cache and put first on ``PYTHONPATH``; the rest comes from here.
Kernels (sgl-kernel, sglang-kernel, flashinfer) are left out: the kernel situation is a
column of the matrix (none, a stand-in of the pinned kernel, a stand-in of a newer one).
The sglang wheel itself is unpacked from the wheel cache (:mod:`sglang_shims.testing`).

A cell is one ``python -S`` process (``tools/matrix/probe.py``): CUDA faked as the CPU
tests fake it (``tests/programs/fake_cuda.py``), the serving graph imported, and with no
kernel installed the tiny Qwen3/Llama model check.  ``SGLANG_SHIMS=0`` and no activation
for stock; the ``.pth`` line for the shims.  Results merge into the data file release by
release, so an interrupted run keeps what it finished.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any, cast

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from sglang_shims.kernels.surface import exports
from sglang_shims.testing import standin, wheels
from tests.support.programs import FAKE_CUDA, assemble
from tests.support.run import ACTIVATE, REPO, SITE_PACKAGES, clean_env
from tools.paths import portable, portable_tree
from tools.refresh import snapshot

DATA = Path(__file__).with_name("compatibility.json")
"""Every run's full record; ``doctor`` ships the part it reads (``python -m tools.refresh
compatibility-runtime``)."""
PROBE = Path(__file__).with_name("probe.py")
FIRST = Version("0.4.0")
"""The oldest release the matrix runs (the first on today's torch line); there is no
newest: every release the index has from here on is in the matrix."""

# Never installed into a release's overlay: the kernel is a column of the matrix,
# flashinfer's prebuilt GPU binaries (cubin, jit-cache: hundreds of MB, GPU-only) are
# useless on CPU, torch/torchvision/triton are today's (the skew under test), torchaudio
# has no release for today's torch, and sglang is the unpacked wheel itself.
# flashinfer-python itself is installed: some releases import it at module level.
# pyairports: its project's releases are gone from PyPI and the name now holds one unrelated
# upload (0.0.1, 2025-09-25: a `byted-wandb` script, no `pyairports` module): never install it.
LEFT_OUT = frozenset(canonicalize_name(n) for n in (
    "sglang", "sgl-kernel", "sglang-kernel", "flashinfer-cubin", "flashinfer-jit-cache",
    "torch", "torchvision", "torchaudio", "triton", "pyairports"))
# Pins of a release that cannot be installed beside today's torch or from this machine, and
# what the matrix installs instead: (the resolver's complaint, the override uv gets -- ``\1``
# is taken from the complaint --, the page's words for it, why).  Recorded per release as
# "relaxed" (the page's "pins replaced").
RELAX: list[tuple[str, str, str, str]] = [
    (r"cuda-python", "cuda-python>=13", "`cuda-python>=13`",
     "cuda-python 12.9 needs cuda-bindings 12; today's torch needs 13"),
    (r"depends on (tokenizers[^\s]+) and you require tokenizers==", r"\1",
     "`tokenizers` as transformers asks",
     "the release pins a tokenizers older than the one the newest transformers 5 needs;"
     " the run installs the one transformers asks for"),
    (r"transformers[^\s]* depends on ((?!tokenizers)([A-Za-z0-9][A-Za-z0-9._\-]*)[<>=!~][^\s]*)"
     r" and[\s\S]*?you require \2[<>=!~]", r"\1",
     "a dependency as transformers asks",
     "the release pins a dependency of transformers (kernels, say) below what the newest"
     " transformers 5 needs; `pip install -U transformers` installs the one transformers"
     " asks for (pip warns that the release wanted another), and so does the run"),
    (r"Because ([A-Za-z0-9][A-Za-z0-9._\-]*)==([^\s,]+) depends on [^\s]+ and"
     r" transformers[^\s]* depends on", r"\1>=\2",
     "a pin that transformers' dependencies outgrow let rise",
     "the release pins a package (tokenizers, say) whose own dependencies conflict with"
     " the newest transformers 5's; `pip install -U transformers` upgrades it past the pin"
     " (pip warns), and the run lets it rise the same way"),
    (r"no version of apache-tvm-ffi==0\.1\.0b15 and flashinfer-python==0\.4\.[01] depends",
     "flashinfer-python==0.4.0rc3", "`flashinfer-python==0.4.0rc3`",
     "flashinfer-python 0.4.0 and 0.4.1 are published as source only, and their build needs"
     " apache-tvm-ffi 0.1.0b15, since deleted from PyPI: they cannot be installed today; the"
     " run installs 0.4.0rc3, the nearest flashinfer that still builds (sglang 0.5.3's pin)"),
    (r"flashinfer was not found in the package registry", 'flashinfer; sys_platform == "never"',
     "`flashinfer` left out",
     "sglang 0.4.0-0.4.2.post1 require `flashinfer`, a name published only on flashinfer.ai's"
     " own wheel index (one per torch and CUDA, none for today's torch), never on PyPI;"
     " it is a GPU kernel library like the ones the kernel columns stand for, and these"
     " releases import it only where a GPU backend is chosen, so the run leaves it out"),
    (r"there is no version of xgrammar==0\.1\.1[456]\b", "xgrammar==0.1.17",
     "`xgrammar==0.1.17`",
     "xgrammar 0.1.14, 0.1.15 and 0.1.16 have been deleted from PyPI, so the pin cannot be"
     " installed today by anyone; the run installs 0.1.17, the nearest release still"
     " published"),
    (r"pypi\.nvidia\.com/?\s+cuda-tile", 'cuda-tile; sys_platform == "never"',
     "`cuda-tile` left out",
     "cuda-tile (cuTile) is published on NVIDIA's index only (PyPI holds a placeholder that"
     " fails to build) and that index cannot be reached from the run machine; no sglang"
     " module of these releases imports cuda.tile, so the run leaves it out"),
]
# What the resolver accepts and the environment cannot import, and the remedy the run applies
# (recorded with the pins replaced): (the lock's pins break it, the override, the page's
# words, why).  Only for breaks in no code of sglang's, where no shim can act.
def _pyextensiontype(pins: dict[str, str]) -> bool:
    """datasets < 2.14.7 subclasses pa.PyExtensionType, which pyarrow 21 removed."""
    return "datasets" in pins and Version(pins["datasets"]) < Version("2.14.7") and \
        Version(pins.get("pyarrow", "0")) >= Version("21")


REMEDY: list[tuple[Callable[[dict[str, str]], bool], str, str, str]] = [
    (_pyextensiontype, "pyarrow<21", "`pyarrow<21`",
     "datasets before 2.14.7 subclasses `pa.PyExtensionType` in `datasets/features` at"
     " import, and pyarrow 21 removed it (both read from their wheels), while datasets'"
     " metadata admits any pyarrow; outlines 0.0.x imports datasets, so the release's"
     " runtime fails inside datasets; the run installs the pyarrow before it, as a user"
     " must"),
    (lambda pins: Version(pins.get("numpy", "2")).major < 2 and not _pyextensiontype(pins)
     and Version(pins.get("pyarrow", "0")) >= Version("26"), "pyarrow<26", "`pyarrow<26`",
     "pyarrow 26 needs NumPy 2 (apache/arrow PR 50769) without saying so in its metadata,"
     " so the resolver pairs it with the numpy<2 that vllm and outlines of releases up to"
     " 0.4.5 ask for, and `import pyarrow` (datasets, from outlines) fails in a compiled"
     " module; the run installs the pyarrow before it, as a user must"),
    (lambda pins: Version(pins.get("transformers", "5")) < Version("4.53")
     and Version(pins.get("compressed-tensors", "0")) >= Version("0.13"),
     "compressed-tensors<0.13", "`compressed-tensors<0.13`",
     "compressed-tensors 0.13 and later import `transformers.masking_utils` (transformers"
     " 4.53+) while their metadata admits transformers 4.45, so releases pinning an older"
     " transformers get one that fails at import, inside compressed-tensors; the run"
     " installs 0.12, the newest without that import, as a user must"),
]
# What a release imports at module level without declaring it, and the requirement the run
# adds (recorded with the pins replaced as ``+requirement``): (the top-level module, the
# requirement, the page's words, why).  Added only where the resolved lock has no
# distribution of that name (another requirement may bring it: vllm up to 0.4.4.post1):
# otherwise this environment's own copy, of any version, would be found instead, which no
# user of the release has.  A remedy of :data:`REMEDY` then applies to it as to any pin.
UNDECLARED: list[tuple[str, str, str, str]] = [
    ("compressed_tensors", "compressed-tensors", "`compressed-tensors` added",
     "sglang 0.4.4.post2 imports `compressed_tensors` at module level"
     " (`sglang/srt/layers/quantization/compressed_tensors/`, reached from the model runner)"
     " and neither declares it nor requires the vllm that brought it up to 0.4.4.post1;"
     " 0.4.4.post3 adds `compressed-tensors` to its requirements. A fresh install fails with"
     " `No module named 'compressed_tensors'` until the user installs it; the run adds the"
     " requirement as 0.4.4.post3 declares it, and resolves it as for 0.4.4.post3"),
]
NVIDIA_INDEX = "https://pypi.nvidia.com"  # tried first for what only NVIDIA publishes
BUILDER = ("setuptools==84.2.1", "packaging==26.4", "wheel==0.48.0")
"""The environment a locked install builds source-only pins in (flashinfer-python 0.2.x to
0.4.x publish no wheel), without build isolation: an isolated build resolves the build
requirements against the index of the hour, and flashinfer-python 0.4.0rc3's backend asks for
an unpinned ``torch`` (and ninja, numpy, requests) even though it only copies files without
``FLASHINFER_ENABLE_AOT``, so uv fetched the newest torch, triton and CUDA libraries (torch
2.15.0 and triton 3.9.0 on 2026-12-05, several GB) to build it (sglang 0.5.3's lock, read by
tests/patches/test_flashinfer_jit_norm_fallback.py).  Pinned, so that a lock pins the whole
install; a source build that needs anything else fails, naming what is missing."""
KEPT = ("torch", "torchvision", "triton")  # overridden to this environment's versions
TIMEOUT = 900
TREE = [REPO]  # the checkout whose sglang_shims the cells run (--tree: a clean snapshot)


def _index_versions(project: str) -> list[Version]:
    """Every version of ``project`` on PyPI that has a file (PEP 691 JSON simple API)."""
    request = urllib.request.Request(f"https://pypi.org/simple/{project}/",
                                     headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        data = json.load(response)
    return sorted(Version(v) for v in data["versions"])


def releases() -> list[str]:
    """Every final and post release of sglang from :data:`FIRST` on, from the index."""
    return in_matrix(_index_versions("sglang"))


def in_matrix(versions: list[Version]) -> list[str]:
    """The releases of ``versions`` the matrix runs: final and post releases from FIRST."""
    return [str(v) for v in sorted(versions)
            if v >= FIRST and not v.is_prerelease and not v.is_devrelease and not v.local]


def spread(everything: list[str]) -> list[str]:
    """A sample across the releases: every fourth release (post releases left out)
    counted from the first, and the newest."""
    plain = [v for v in everything if not Version(v).is_postrelease]
    return sorted({*plain[::4], *plain[-1:]}, key=Version)


def newest_transformers5() -> str:
    return str(max(v for v in _index_versions("transformers")
                   if v.major == 5 and not v.is_prerelease and not v.is_devrelease))


def requirements(root: Path) -> list[Requirement]:
    """The release's runtime requirements: top level, plus the srt/runtime_common extras
    of releases that kept them there (up to 0.5.2)."""
    (info,) = root.glob("sglang-*.dist-info")
    meta = metadata.PathDistribution(info)
    found: dict[str, Requirement] = {}
    for line in meta.requires or []:
        req = Requirement(line)
        name = canonicalize_name(req.name)
        if name in LEFT_OUT:
            continue
        envs = [{"extra": e} for e in ("", "srt", "runtime_common", "runtime-common")]
        if req.marker is None or any(req.marker.evaluate(e) for e in envs):
            req.marker = None
            found.setdefault(name, req)
    return list(found.values())


def pins(root: Path) -> dict[str, str]:
    """torch, transformers and kernel pins read from the wheel's metadata."""
    (info,) = root.glob("sglang-*.dist-info")
    out: dict[str, str] = {}
    for line in metadata.PathDistribution(info).requires or []:
        req = Requirement(line)
        name = canonicalize_name(req.name)
        spec = str(req.specifier)
        if name in ("torch", "transformers", "sgl-kernel", "sglang-kernel") and \
                spec.startswith("==") and name not in out:
            out["kernel" if "kernel" in name else name] = spec[2:]
            if "kernel" in name:
                out["kernel_dist"] = name
    return out


def _installed() -> dict[str, str]:
    return {canonicalize_name(d.metadata["Name"]): d.version for d in metadata.distributions()
            if d.metadata["Name"]}


LOCKS = Path(__file__).with_name("locks")
"""The environment of every overlay the matrix resolved, one ``<tag>.txt`` each: what the
tests install (never resolved again at test time), and what the canary compares with."""


def tag_of(release: str, transformers: str | None, upgrades: tuple[tuple[str, str], ...] = ()
           ) -> str:
    """The overlay's name: the release, its transformers flavour, any other upgrade."""
    base = f"{release}-tf{transformers}" if transformers else f"{release}-pinned"
    return base + "".join(f"-{canonicalize_name(d)}{v}" for d, v in upgrades)


def overlay(release: str, root: Path, transformers: str | None,
            upgrades: tuple[tuple[str, str], ...] = (), *, locked: bool = False,
            record: bool = False) -> Path:
    """The folder of what ``release`` needs beyond this environment, installed once.

    ``locked``: installed from the lock a matrix run recorded (:data:`LOCKS`), nothing
    resolved, so that the environment is the same whatever the index lists today (the
    tests).  Otherwise resolved against the index (``upgrades``: other distributions
    raised as ``pip install -U`` would, for the canary), and with ``record`` the lock is
    written into :data:`LOCKS`."""
    tag = tag_of(release, transformers, upgrades)
    lock = LOCKS / f"{tag}.txt"
    if locked and not lock.is_file():
        raise RuntimeError(f"no recorded lock {lock.relative_to(REPO)}: a matrix run of"
                           f" {release} records it (python -m tools.matrix.run --releases"
                           f" {release})")
    name = f"{tag}-lock{hashlib.sha256(lock.read_bytes()).hexdigest()[:8]}" if locked else tag
    dest = wheels.cache_dir() / "matrix" / name
    if (dest / ".complete").exists():
        if record and not locked and not lock.is_file():  # resolved before, never recorded
            _record(lock, release, transformers, upgrades, dest)
        return dest
    work = dest.with_name(dest.name + f".tmp{os.getpid()}")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    here = _installed()
    cap = None
    if locked:
        wanted, relaxed, index = read_lock(lock)
        _install(work, index, here, wanted, isolated=False)
    else:
        cap = None if transformers or "transformers" in pins(root) else uploaded(release)
        relaxed, index = _resolve(work, root, here, transformers, upgrades, cap)
    (work / "relaxed.txt").write_text("".join(f"{r}\n" for r in relaxed), encoding="utf-8")
    (work / "index.txt").write_text("".join(f"{i}\n" for i in index), encoding="utf-8")
    if record and not locked:
        _record(lock, release, transformers, upgrades, work, cap)
    (work / ".complete").write_text(release, encoding="utf-8")
    shutil.rmtree(dest, ignore_errors=True)
    work.rename(dest)
    return dest


def uploaded(release: str) -> str:
    """The day ``release`` reached the index, from the recorded snapshot."""
    day: str = snapshot.load()["projects"]["sglang"][release]["uploaded"]
    return day


def _resolve(work: Path, root: Path, here: dict[str, str], transformers: str | None,
             upgrades: tuple[tuple[str, str], ...], cap: str | None = None
             ) -> tuple[list[str], list[str]]:
    """Resolve the release's requirements and install; (pins replaced, extra index).

    ``cap``: the release's upload day, for a release that pins no transformers (up to
    0.4.3.post2): its own column then gets the newest transformers the index had that day,
    the one ``pip install`` gave its users, rather than one years newer (a transformers 5
    under a release written for 4.4x), which is what the newest-5 column is for."""
    limit = [] if cap is None else ["--exclude-newer-package",
                                    f"transformers={_day_after(cap)}"]
    imported = module_imports(root)
    added: list[str] = []
    overrides = [f"{name}=={here[name].split('+')[0]}" for name in KEPT if name in here]
    overrides += [f"transformers=={transformers}"] if transformers else []
    overrides += [f"{dist}=={version}" for dist, version in upgrades]
    relaxed: list[str] = []
    index: list[str] = []
    while True:  # resolve and install; a known complaint gets its replacement, then again
        (work / "requirements.in").write_text(
            "".join(f"{r}\n" for r in [*map(str, requirements(root)), *added]),
            encoding="utf-8")
        (work / "overrides.txt").write_text("".join(f"{o}\n" for o in overrides + relaxed),
                                            encoding="utf-8")
        try:
            _uv("pip", "compile", "--python", sys.executable, "--quiet", "--no-header",
                *index, *limit, "--override", work / "overrides.txt", work / "requirements.in",
                "-o", work / "lock.txt")
            wanted = lock_pins(work / "lock.txt")
            missing = undeclared(imported, wanted, added)
            if missing:
                added += missing
                continue
            more = [fix for broken, fix, _what, _why in REMEDY
                    if broken(wanted) and fix not in relaxed]
            if more:
                relaxed += more
                continue
            _install(work, index, here, wanted)
            return [f"+{a}" for a in added] + relaxed, index
        except RuntimeError as exc:
            if NVIDIA_INDEX in str(exc) and not index and _reachable(NVIDIA_INDEX):
                index = ["--extra-index-url", NVIDIA_INDEX]  # where the package lives
                continue
            more = replacements(str(exc), relaxed)
            if not more:
                shutil.rmtree(work, ignore_errors=True)
                raise
            relaxed += more


_IMPORT = re.compile(r"^(?:import|from)\s+([A-Za-z_]\w*)", re.M)


def module_imports(root: Path) -> set[str]:
    """The top-level modules the release's ``sglang`` package imports at module level
    (an ``import`` or ``from`` statement at the start of a line, read from the wheel)."""
    found: set[str] = set()
    for path in (root / "sglang").rglob("*.py"):
        found.update(_IMPORT.findall(path.read_text(encoding="utf-8", errors="replace")))
    return found


def undeclared(imported: set[str], wanted: dict[str, str], done: list[str]) -> list[str]:
    """The requirements of :data:`UNDECLARED` to add: the release imports the module and
    the resolved pins ``wanted`` have no distribution that provides it (not yet added)."""
    return [requirement for module, requirement, _what, _why in UNDECLARED
            if module in imported and requirement not in done
            and canonicalize_name(Requirement(requirement).name) not in wanted]


def _record(lock: Path, release: str, transformers: str | None,
            upgrades: tuple[tuple[str, str], ...], folder: Path, cap: str | None = None) -> None:
    """Write the lock of an overlay ``folder`` resolved from the index (a folder resolved by
    an earlier run is recorded as it is: its cells ran on it), dated when it was resolved."""
    def lines(name: str) -> list[str]:
        path = folder / name  # index.txt is missing from folders resolved before it was kept
        return [x for x in path.read_text(encoding="utf-8").splitlines() if x] \
            if path.is_file() else []

    resolved = folder / "lock.txt"
    when = datetime.date.fromtimestamp(resolved.stat().st_mtime).isoformat()
    LOCKS.mkdir(exist_ok=True)
    lock.write_text(render_lock(release, transformers, upgrades, resolved, lines("relaxed.txt"),
                                lines("index.txt"), when, cap), encoding="utf-8")


def lock_pins(path: Path) -> dict[str, str]:
    """{name: version} of every ``name==version`` line of a lock (uv's or ours)."""
    wanted: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        match = re.match(r"^([A-Za-z0-9_.\-]+)==([^\s;]+)", line)
        if match:
            wanted[canonicalize_name(match.group(1))] = match.group(2)
    return wanted


def _day_after(day: str) -> str:
    """The day after ``day`` (uv's limit is exclusive; an upload that day counts)."""
    return (datetime.date.fromisoformat(day) + datetime.timedelta(days=1)).isoformat()


def render_lock(release: str, transformers: str | None, upgrades: tuple[tuple[str, str], ...],
                resolved: Path, relaxed: list[str], index: list[str],
                on: str | None = None, cap: str | None = None) -> str:
    """The recorded lock: a header saying what it is, then one pin per line."""
    what = f"transformers {transformers}" if transformers else "its own pins"
    what += f" (no transformers pin: the newest on {cap})" if cap else ""
    what += "".join(f", {d} {v}" for d, v in upgrades)
    lines = [f"# sglang {release} on {what}: resolved by tools/matrix/run.py on"
             f" {on or datetime.date.today().isoformat()} (torch, torchvision, triton: the"
             " run's)"]
    lines += [f"# relaxed: {r}" for r in relaxed]
    lines += [f"# index: {i}" for i in index if not i.startswith("--")]
    pins = lock_pins(resolved)
    return "\n".join([*lines, *(f"{n}=={pins[n]}" for n in sorted(pins))]) + "\n"


def read_lock(path: Path) -> tuple[dict[str, str], list[str], list[str]]:
    """(pins, pins replaced, extra index arguments) of a recorded lock."""
    text = path.read_text(encoding="utf-8").splitlines()
    relaxed = [line.partition(": ")[2] for line in text if line.startswith("# relaxed: ")]
    index = [a for line in text if line.startswith("# index: ")
             for a in ("--extra-index-url", line.partition(": ")[2])]
    return lock_pins(path), relaxed, index


def _install(work: Path, index: list[str], here: dict[str, str],
             wanted: dict[str, str], *, isolated: bool = True) -> None:
    """Install into ``work/site`` what of ``wanted`` differs from this environment.

    ``isolated=False`` (a lock's install): source-only pins are built without isolation in a
    private :func:`_builder` environment, so that nothing is resolved (see :data:`BUILDER`);
    else in isolated environments uv resolves (the matrix run, which resolves anyway)."""
    shutil.rmtree(work / "site", ignore_errors=True)
    todo = sorted(f"{n}=={v}" for n, v in wanted.items()
                  if n not in LEFT_OUT and here.get(n) != v)
    (work / "installed.txt").write_text("".join(f"{t}\n" for t in todo), encoding="utf-8")
    if not todo:
        return
    if isolated:
        _uv("pip", "install", "--python", sys.executable, "--quiet", "--no-deps", *index,
            "--target", work / "site", "-r", work / "installed.txt")
        return
    try:
        _uv("pip", "install", "--python", _builder(work / "builder"), "--no-build-isolation",
            "--quiet", "--no-deps", *index, "--target", work / "site", "-r",
            work / "installed.txt")
    finally:
        shutil.rmtree(work / "builder", ignore_errors=True)


def _builder(folder: Path) -> Path:
    """A fresh environment of this interpreter with :data:`BUILDER` in it (exact pins, no
    dependency resolved); its interpreter."""
    shutil.rmtree(folder, ignore_errors=True)
    _uv("venv", "--quiet", "--python", sys.executable, folder)
    python = folder / "bin" / "python"
    if BUILDER:
        _uv("pip", "install", "--python", python, "--quiet", "--no-deps", *BUILDER)
    return python


def replacements(error: str, done: list[str]) -> list[str]:
    """The overrides of :data:`RELAX` that answer the resolver's ``error`` (not yet made)."""
    out = []
    for complaint, override, _what, _why in RELAX:
        match = re.search(complaint, error)
        if match:
            line = match.expand(override)
            if line not in done and line not in out:
                out.append(line)
    return out


def _reachable(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=20):
            return True
    except OSError:
        return False


def _uv_bin() -> str:
    """uv on PATH, else the one the ``uv`` package installed (``pip install uv``)."""
    found = shutil.which("uv")
    if found:
        return found
    import uv

    return str(uv.find_uv_bin())


def _uv(*args: str | Path) -> None:
    proc = subprocess.run([_uv_bin(), *map(str, args)], capture_output=True, text=True,
                          timeout=1800, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"uv {args[0]} {args[1]}: {proc.stderr.strip()[-2000:]}")


def newest_kernel() -> str:
    """The newest kernel whose export surface is known (the "newer kernel" stand-in)."""
    return str(max(Version(v) for v in standin.versions() if "+" not in v))


def kernel_situations(pinned: str | None, scratch: Path,
                      root: Path) -> dict[str, Path | str | None]:
    """none / stand-in of the pinned kernel / stand-in of the newest kernel we know.

    A folder, or a string saying why that situation cannot be built."""
    known = standin.versions()
    newest = newest_kernel()
    ops = standin.ops_faked_by(root)
    out: dict[str, Path | str | None] = {"none": None}
    for label, version in (("pinned", pinned), ("newer", newest)):
        if version is None:
            out[label] = "the release pins no kernel"
        elif label == "newer" and pinned and Version(newest) <= Version(pinned):
            out[label] = f"no kernel newer than the pin {pinned} in the export data"
        elif version not in known:
            out[label] = f"no export data for kernel {version} (known up to {newest})"
        else:
            out[label] = standin.build(version, scratch / f"kernel-{version}", torch_ops=ops)
    return out


SITE_PTH = "import site as _site\nfor _dir in {dirs!r}:\n    _site.addsitedir(_dir)\ndel _site\n"


def site_pth(paths: list[Path]) -> str:
    """The ``.pth`` files of the release's own packages, processed as ``site`` would.

    A cell runs ``python -S`` with the overlay on ``PYTHONPATH``, where nothing reads
    ``.pth`` files; in a real install ``site`` does, and some packages depend on it
    (nvidia-cutlass-dsl puts its ``cutlass`` package on ``sys.path`` that way, 0.5.11+)."""
    dirs = [str(path) for path in paths if any(path.glob("*.pth"))]
    return SITE_PTH.format(dirs=dirs) if dirs else ""


def run_cell(paths: list[Path], shims: bool, model: bool) -> dict[str, Any]:
    env = clean_env(PYTHONPATH=os.pathsep.join([str(TREE[0]), *map(str, paths),
                                                *SITE_PACKAGES]))
    env.update({"MATRIX_MODEL": "1" if model else "0", "SGLANG_SHIMS_KERNEL_BACKEND": "torch"})
    if not shims:
        env["SGLANG_SHIMS"] = "0"
    code = site_pth(paths) + FAKE_CUDA + (ACTIVATE if shims else "") + assemble(PROBE)
    start = time.monotonic()
    try:
        proc = subprocess.run([sys.executable, "-S", "-c", code], env=env, capture_output=True,
                              text=True, timeout=TIMEOUT, cwd=TREE[0], check=False)
    except subprocess.TimeoutExpired:
        return {"crash": f"timed out after {TIMEOUT} s"}
    try:
        result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        tail = [line for line in proc.stderr.strip().splitlines() if line.strip()][-1:]
        result = {"crash": f"exit {proc.returncode}: {tail[0][:400] if tail else ''}"}
    result["wall"] = round(time.monotonic() - start, 1)
    return cast(dict[str, Any], portable_tree(result))


def run_release(release: str, transformers5: str, scratch: Path, jobs: int,
                log: Any = print, modes: tuple[str, ...] = ("stock", "shims"),
                old: dict[str, Any] | None = None,
                flavours: tuple[str, ...] = ("pinned", "newest5")) -> dict[str, Any]:
    """Every cell of ``release``; a mode left out of ``modes`` is kept from ``old`` where
    :func:`_keepable` allows (else it runs too).  A transformers flavour left out of
    ``flavours`` (the canary reruns only the newest-5 column) keeps ``old``'s cells as
    they were recorded, each saying which run it comes from (``kept_from``)."""
    start = time.monotonic()
    root = wheels.unpack("sglang", release)
    pinned = pins(root)
    entry: dict[str, Any] = {"pins": pinned, "cells": []}
    situations = kernel_situations(pinned.get("kernel"), scratch / release, root)
    entry["kernels"] = {"pinned": pinned.get("kernel"), "newer": newest_kernel()}
    tasks = []
    for flavour, version in (("pinned", None), ("newest5", transformers5)):
        if flavour not in flavours:
            _keep_flavour(old, entry, flavour)
            continue
        try:
            extra = overlay(release, root, version, record=True)
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            for kernel in situations:
                for mode in ("stock", "shims"):
                    entry["cells"].append({"transformers": flavour, "kernel": kernel,
                                           "mode": mode,
                                           "env_error": portable(str(exc))[-600:]})
            continue
        relaxed = (extra / "relaxed.txt").read_text(encoding="utf-8").splitlines()
        if relaxed:
            entry.setdefault("relaxed", {})[flavour] = relaxed
        for kernel, folder in situations.items():
            for mode in ("stock", "shims"):
                cell = {"transformers": flavour, "kernel": kernel, "mode": mode}
                if isinstance(folder, str):
                    cell["not_run"] = folder
                    entry["cells"].append(cell)
                    continue
                kept = None if mode in modes else _keepable(old, entry, cell)
                if kept is not None:
                    entry["cells"].append(kept)
                    continue
                paths = [extra / "site", root, *([folder] if folder else [])]
                tasks.append((cell, paths, mode == "shims", kernel == "none"))
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(run_cell, paths, shims, model): cell
                   for cell, paths, shims, model in tasks}
        for future in concurrent.futures.as_completed(futures):
            cell = futures[future]
            cell.update(_trim(future.result()))
            entry["cells"].append(cell)
            log(f"  {release} {cell['transformers']:8} {cell['kernel']:6} {cell['mode']:5} "
                f"{summary(cell)}")
    order = {k: i for i, k in enumerate(("pinned", "newest5", "none", "newer", "stock",
                                         "shims"))}
    entry["cells"].sort(key=lambda c: (order[c["transformers"]], order.get(c["kernel"], 1),
                                       order[c["mode"]]))
    entry["seconds"] = round(time.monotonic() - start, 1)
    return entry


def _keep_flavour(old: dict[str, Any] | None, entry: dict[str, Any], flavour: str) -> None:
    """Copy ``old``'s cells (and pins replaced) of one transformers flavour into ``entry``."""
    if old is None:
        return
    for previous in old["cells"]:
        if previous["transformers"] == flavour:
            kept = dict(previous)
            kept.setdefault("kept_from", f"{old['date']} "
                            f"{old['versions'].get('sglang_shims_commit', '?')}")
            entry["cells"].append(kept)
    if flavour in old.get("relaxed", {}):
        entry.setdefault("relaxed", {})[flavour] = old["relaxed"][flavour]


def _keepable(old: dict[str, Any] | None, entry: dict[str, Any],
              cell: dict[str, Any]) -> dict[str, Any] | None:
    """``cell`` as ``old`` recorded it, when that run saw the same thing this one would.

    Only for modes the shims do not touch (stock: no activation, so the shims' commit does
    not matter): the same harness (probe, fake CUDA, stand-in builder and its data), the same
    kernels and the same pins replaced; never an environment error.  The kept cell says
    where it comes from (``kept_from``)."""
    if not old or old.get("versions", {}).get("harness") != harness() or \
            old.get("kernels") != entry["kernels"] or \
            old.get("relaxed", {}).get(cell["transformers"]) != \
            entry.get("relaxed", {}).get(cell["transformers"]):
        return None
    for previous in old["cells"]:
        if all(previous[k] == cell[k] for k in ("transformers", "kernel", "mode")):
            if "env_error" in previous or "not_run" in previous:
                return None
            kept: dict[str, Any] = dict(previous)
            kept.setdefault("kept_from", f"{old['date']} "
                            f"{old['versions'].get('sglang_shims_commit', '?')}")
            return kept
    return None


def harness() -> str:
    """A digest of what decides a cell besides sglang, its environment and the shims."""
    repo = REPO
    digest = hashlib.sha256()
    for text in (assemble(PROBE), FAKE_CUDA, ACTIVATE, SITE_PTH):
        digest.update(text.encode())
    kernels = repo / "sglang_shims" / "kernels"
    for path in (Path(standin.__file__), kernels / "standin" / "provider.py",
                 kernels / "surface" / "exports.py",
                 repo / "sglang_shims" / "testing" / "wheels.py"):
        digest.update(path.read_bytes())
    digest.update(json.dumps(exports.surfaces(), sort_keys=True).encode())
    return digest.hexdigest()[:12]


_CPU_ONLY = re.compile(r"Could not run '(sglang::\w+)' with arguments from the 'CPU' backend")


def _trim(result: dict[str, Any]) -> dict[str, Any]:
    """Keep the committed data small: failing modules grouped by their error.

    A model check that reached one of sglang's own JIT CUDA kernels (``sglang::`` ops,
    compiled with nvcc when first called, registered for CUDA only) cannot be run on this
    CPU machine: that is no verdict on the model (``ok`` None), and says which op.
    """
    model = result.get("model")
    match = _CPU_ONLY.search(str((model or {}).get("error")))
    if model and match:
        model["ok"] = None
        model["error"] = (f"not checkable on CPU: sglang's own JIT CUDA kernel {match[1]}"
                          " (compiled by nvcc at first call; no CPU or Triton stand-in for it"
                          " in the shims yet)")
    graph = result.get("graph")
    if graph and graph.get("ok"):
        graph.pop("results", None)
    elif graph and all(isinstance(v, str) for v in graph["results"].values()):
        by_error: dict[str, list[str]] = {}  # {error: [modules]}: the same error repeats
        for module, error in graph["results"].items():
            if error != "ok":
                by_error.setdefault(error[:300], []).append(module.removeprefix("sglang."))
        graph["results"] = by_error
    return result


def summary(cell: dict[str, Any]) -> str:
    if "env_error" in cell:
        return f"env: {cell['env_error'][:120]}"
    if "not_run" in cell:
        return f"not run: {cell['not_run']}"
    if "crash" in cell:
        return f"crash: {cell['crash'][:160]}"
    graph = cell["graph"]
    text = "graph ok" if graph["ok"] else \
        f"graph {graph['failed']}/{graph['of']} fail: {graph['first']['error'][:100]}"
    model = cell.get("model")
    if model:
        text += "; model " + ("ok" if model["ok"] else
                              "n/a" if model["ok"] is None else "FAIL") + \
            ("" if model["ok"] else f" ({str(model.get('error'))[:100]})")
    return text + f" [{cell.get('wall')} s]"


def _versions() -> dict[str, str]:
    here = _installed()
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], capture_output=True, text=True, cwd=TREE[0],
                              check=False).stdout.strip()

    commit = git("rev-parse", "--short", "HEAD")
    if git("status", "--porcelain", "--", "sglang_shims", "patches"):
        commit += "+uncommitted"
    return {"python": sys.version.split()[0], "torch": here.get("torch", ""),
            "triton": here.get("triton", ""), "transformers_base": here.get("transformers", ""),
            "sglang_shims_commit": commit, "uv": _uv_version(), "harness": harness()}


def _uv_version() -> str:
    return subprocess.run([_uv_bin(), "--version"], capture_output=True, text=True,
                          check=False).stdout.split()[-1]


def outputs() -> list[Path]:
    """What a matrix run writes into the repository: the data and the locks."""
    return [DATA, *sorted(LOCKS.glob("*.txt"))]


def problems(path: Path = DATA) -> list[str]:
    """Offline: every release entry is complete and the recorded index names it."""
    data = load(path)
    out = []
    listed = set(data.get("index", {}).get("releases", []))
    for release, entry in data["releases"].items():
        missing = [k for k in ("cells", "date", "kernels", "pins", "versions") if k not in entry]
        if missing:
            out.append(f"{path.name}: {release} lacks {', '.join(missing)}")
        if release not in listed:
            out.append(f"{path.name}: {release} is not in the index the run recorded")
    return out


def stale(snapshot: dict[str, Any], path: Path = DATA) -> list[str]:
    """What the recorded package index has that the matrix has not run: releases, and a
    newer transformers 5 (each release's newest-5 column was run with its own)."""
    data = load(path)
    out = [f"sglang {v} is on the index and not in the matrix" for v in in_matrix(
        [Version(v) for v in snapshot["projects"]["sglang"]]) if v not in data["releases"]]
    finals = [Version(v) for v in snapshot["projects"]["transformers"]
              if Version(v).major == 5 and not Version(v).is_prerelease]
    newest = str(max(finals)) if finals else None
    behind = [r for r, e in data["releases"].items()
              if e.get("versions", {}).get("transformers5") != newest]
    if newest and behind:
        out.append(f"transformers {newest} is the newest 5.x; {len(behind)} release(s) ran"
                   " their newest-5 column with an older one")
    return out


def load(path: Path = DATA) -> dict[str, Any]:
    if path.exists():
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        return data
    return {"schema": 1, "releases": {}}


def save(data: dict[str, Any], path: Path = DATA) -> None:
    data["releases"] = dict(sorted(data["releases"].items(), key=lambda kv: Version(kv[0])))
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    tmp.replace(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--releases", help="comma-separated; 'spread' for every fourth"
                        " and the newest; default: every release from the index")
    parser.add_argument("--jobs", type=int, default=1, help="cells run at once")
    parser.add_argument("--out", type=Path, default=DATA)
    parser.add_argument("--tree", type=Path, default=REPO,
                        help="checkout whose sglang_shims the cells run (e.g. a `git worktree`"
                        " of HEAD, so that edits in progress do not leak into the results)")
    parser.add_argument("--flavours", default="pinned,newest5",
                        help="'pinned' runs only the column of the release's own transformers"
                        " and keeps the other as the last run recorded it")
    parser.add_argument("--modes", default="stock,shims",
                        help="'shims' reruns only the shims cells and keeps the stock cells"
                        " of the last run where it saw the same harness and environment")
    args = parser.parse_args(argv)
    modes = tuple(args.modes.split(","))
    flavours = tuple(args.flavours.split(","))
    TREE[0] = args.tree.resolve()
    everything = releases()
    if args.releases == "spread":
        chosen = spread(everything)
    elif args.releases:
        chosen = args.releases.split(",")
    else:
        chosen = everything
    unknown = [r for r in chosen if r not in everything]
    if unknown:
        parser.error(f"not releases of the matrix (final and post releases from {FIRST}"
                     f" on the index): {', '.join(unknown)}")
    transformers5 = newest_transformers5()
    import tempfile

    with tempfile.TemporaryDirectory(prefix="sglang-matrix-") as scratch:
        for release in chosen:
            print(f"sglang {release}", flush=True)
            old = load(args.out)["releases"].get(release)
            entry = run_release(release, transformers5, Path(scratch), args.jobs,
                                log=lambda line: print(line, flush=True), modes=modes,
                                old=old, flavours=flavours)
            entry["date"] = datetime.date.today().isoformat()
            entry["versions"] = _versions() | {"transformers5": transformers5}
            data = load(args.out)  # read again: the file may have moved on meanwhile
            data["index"] = {"releases": everything, "transformers5": transformers5}
            data["releases"][release] = entry
            save(data, args.out)
            print(f"  {release}: {entry['seconds']} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
