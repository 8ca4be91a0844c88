"""Point Triton at a ptxas that can assemble this Blackwell GPU's architecture.

Triton compiles every kernel with the ``ptxas`` it bundles unless an environment
variable names another one.  Which binary and which variable depend on the Triton
release (read from the published wheels):

============  ===================================  =================================  ==========
triton        binary used for sm_100 and newer     variable that overrides it         bundled
============  ===================================  =================================  ==========
3.3.x         ``ptxas-blackwell``                  ``TRITON_PTXAS-BLACKWELL_PATH``    12.8.61
3.4.x, 3.5.x  ``ptxas``                            ``TRITON_PTXAS_PATH``              12.8.93
3.6.x         ``ptxas-blackwell``                  ``TRITON_PTXAS_BLACKWELL_PATH``    12.9.86
3.7.x         ``ptxas-blackwell``                  ``TRITON_PTXAS_BLACKWELL_PATH``    13.1.80
============  ===================================  =================================  ==========

(3.3 builds the variable name from ``binary.upper()``, hence the hyphen.)  Triton 3.3
and 3.4 also refuse a CUDA 13 ptxas ("Triton only support CUDA 10.0 or higher, but
got CUDA version: 13.x"), so for them only a 12.x ptxas is usable.

What each architecture needs, checked with the real binaries (``ptxas --gpu-name``):
sm_100a and sm_120a need ptxas >= 12.8, sm_103a and sm_121a >= 12.9, sm_110a (Jetson
Thor under CUDA 13) >= 13.0, and sm_101a (Thor under CUDA 12) is known to 12.8 and
12.9 only.  When the bundled binary falls short and the variable is unset, this patch
looks for a capable ptxas and sets the variable, for this process and its children.
Nothing is imported here: triton is found through its distribution's files.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from sglang_shims.patching import PatchContext

# pytorch-triton (torch nightlies) first: where it is installed, it owns the triton package.
TRITON_DISTS = ("pytorch-triton", "triton")
RELEASE_RE = re.compile(r"release (\d+)\.(\d+)")

# capability -> (lowest ptxas release that knows the -a arch, first release without it)
REQUIREMENTS: dict[tuple[int, int], tuple[tuple[int, int], tuple[int, int] | None]] = {
    (10, 0): ((12, 8), None),
    (10, 1): ((12, 8), (13, 0)),   # renamed sm_110 in CUDA 13.0
    (10, 3): ((12, 9), None),
    (11, 0): ((13, 0), None),
    (12, 0): ((12, 8), None),
    (12, 1): ((12, 9), None),
}

# Where a CUDA toolkit's ptxas usually lives, after $CUDA_HOME, $CUDA_PATH and $PATH.
SYSTEM_GLOBS = (("/usr/local", "cuda/bin/ptxas"), ("/usr/local", "cuda-*/bin/ptxas"),
                ("/opt", "cuda/bin/ptxas"))
# pip's CUDA compiler wheels: nvidia-cuda-nvcc-cu12 and the CUDA 13 merged layout.
PIP_LAYOUTS = ("nvidia/cuda_nvcc/bin/ptxas", "nvidia/cu13/bin/ptxas")
# Remembers what this patch set, so that child processes report the same change.
MARKER = "SGLANG_SHIMS_TRITON_PTXAS"


@dataclass(frozen=True)
class TritonTool:
    """How one triton release picks the ptxas for sm_100 and newer."""

    version: tuple[int, int]
    binary: str            # file name under triton/backends/nvidia/bin
    variable: str          # environment variable that overrides it
    max_major: int | None  # newest CUDA major whose ptxas this triton accepts


def triton_tool(version: tuple[int, int], package: Path | None = None) -> TritonTool | None:
    """How this triton picks ptxas for sm_100+: from its source files where they are
    readable (nightly ``pytorch-triton`` builds do not always match a release), else
    from the release table above."""
    if version < (3, 3):
        return None  # no Blackwell code generation at all: a ptxas cannot help
    if version < (3, 4):
        tool = TritonTool(version, "ptxas-blackwell", "TRITON_PTXAS-BLACKWELL_PATH", 12)
    elif version < (3, 5):
        tool = TritonTool(version, "ptxas", "TRITON_PTXAS_PATH", 12)
    elif version < (3, 6):
        tool = TritonTool(version, "ptxas", "TRITON_PTXAS_PATH", None)
    else:
        tool = TritonTool(version, "ptxas-blackwell", "TRITON_PTXAS_BLACKWELL_PATH", None)
    compiler = _read(package / "backends" / "nvidia" / "compiler.py") if package else None
    if compiler is None:
        return tool
    knobs = _read(package / "knobs.py") if package else None
    if knobs and 'env_nvidia_tool("ptxas-blackwell")' in knobs:          # 3.6+
        binary, variable = "ptxas-blackwell", "TRITON_PTXAS_BLACKWELL_PATH"
    elif '"ptxas-blackwell" if arch >= 100' in compiler:                 # 3.3
        binary, variable = "ptxas-blackwell", "TRITON_PTXAS-BLACKWELL_PATH"
    else:                                                                 # 3.4, 3.5
        binary, variable = "ptxas", "TRITON_PTXAS_PATH"
    max_major = None if "if major >= 13" in compiler else 12             # ptx_get_version
    return TritonTool(version, binary, variable, max_major)


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def arch_name(cap: tuple[int, int]) -> str:
    return f"sm_{cap[0]}{cap[1]}a"


def capable(release: tuple[int, int], cap: tuple[int, int], tool: TritonTool) -> bool:
    if tool.max_major is not None and release[0] > tool.max_major:
        return False
    low, high = REQUIREMENTS[cap]
    return release >= low and (high is None or release < high)


def ptxas_release(path: str) -> tuple[int, int] | None:
    """``ptxas --version``'s "release X.Y", as triton itself reads it; None if unusable."""
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True,
                             timeout=20, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    found = RELEASE_RE.search(out)
    return (int(found.group(1)), int(found.group(2))) if found else None


def installed_triton() -> tuple[str, str, Path] | None:
    """(distribution, version, package folder) of the installed triton, not imported."""
    for dist_name in TRITON_DISTS:
        try:
            dist = metadata.distribution(dist_name)
        except metadata.PackageNotFoundError:
            continue
        return dist_name, dist.version, Path(str(dist.locate_file("triton")))
    return None


def parse_version(text: str) -> tuple[int, int]:
    numbers = re.findall(r"\d+", text)
    return (int(numbers[0]), int(numbers[1])) if len(numbers) >= 2 else (0, 0)


def candidates(environ: Mapping[str, str]) -> Iterator[str]:
    """Existing ptxas files to try, most explicitly configured first, each once."""
    seen: set[str] = set()
    for path in _candidate_paths(environ):
        if path not in seen and Path(path).is_file():
            seen.add(path)
            yield path


def _candidate_paths(environ: Mapping[str, str]) -> Iterator[str]:
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if environ.get(var):
            yield str(Path(environ[var]) / "bin" / "ptxas")
    on_path = shutil.which("ptxas")
    if on_path:
        yield on_path
    for root, pattern in SYSTEM_GLOBS:
        # /usr/local/cuda-13.0 before /usr/local/cuda-12.9
        hits = [str(p) for p in Path(root).glob(pattern)]
        yield from sorted(hits, key=_version_key, reverse=True)
    for entry in sys.path:
        for layout in PIP_LAYOUTS:
            yield str(Path(entry or ".") / layout)


def _version_key(path: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", path))


# Seam for tests: how a candidate's release is read.
probe: Callable[[str], tuple[int, int] | None] = ptxas_release


def apply(ctx: PatchContext) -> None:
    found = installed_triton()
    if found is None:
        ctx.retire("triton is not installed")
    dist_name, version_text, package = found
    tool = triton_tool(parse_version(version_text), package)
    if tool is None:
        ctx.retire(f"{dist_name} {version_text} predates Blackwell support; a ptxas cannot"
                   " help (triton >= 3.3 is needed)")
    caps = sorted({c for c in ctx.gpus() if c[0] >= 10})
    for cap in [c for c in caps if c not in REQUIREMENTS]:
        ctx.note(f"no ptxas requirement is known for {arch_name(cap)}; not checked")
    caps = [c for c in caps if c in REQUIREMENTS]
    if not caps:
        ctx.retire("no Blackwell GPU with a known ptxas requirement")
    archs = ", ".join(arch_name(c) for c in caps)
    triton_label = f"{dist_name} {version_text}"
    if tool.max_major is not None and any(REQUIREMENTS[c][0][0] > tool.max_major for c in caps):
        raise RuntimeError(
            f"{triton_label} accepts only a CUDA {tool.max_major}.x ptxas, and {archs} needs"
            f" CUDA >= {_needed(caps)}: no ptxas can help; upgrade triton to >= 3.5")

    def good(path: str) -> tuple[int, int] | None:
        release = probe(path)
        if release is not None and all(capable(release, c, tool) for c in caps):
            return release
        return None

    configured = os.environ.get(tool.variable, "").strip()
    if configured:
        release = good(configured)
        if release is not None and configured == os.environ.get(MARKER, "").strip():
            # Set by this patch in a parent process (sglang's scheduler, detokenizer ...):
            # the same change, so the same state in every process.
            ctx.setenv(tool.variable, configured)
            ctx.note(f"{tool.variable}={configured} (release {_dotted(release)}), inherited"
                     " from the process that started this one")
            return
        if release is not None:
            ctx.retire(f"{tool.variable}={configured} (release {_dotted(release)})"
                       f" already assembles {archs}")
        raise RuntimeError(
            f"{tool.variable}={configured} ({_describe(configured)}) cannot assemble {archs}"
            f" for {triton_label}; it is your setting, so it is left as it is. Point it at"
            f" the ptxas of CUDA >= {_needed(caps)}{_cap_note(tool)}")

    bundled = package / "backends" / "nvidia" / "bin" / tool.binary
    release = good(str(bundled))
    if release is not None:
        ctx.retire(f"the bundled {tool.binary} (release {_dotted(release)}) of {triton_label}"
                   f" assembles {archs}")
    ctx.note(f"bundled {bundled} ({_describe(str(bundled))}) cannot assemble {archs}")

    for path in candidates(os.environ):
        release = good(path)
        if release is not None:
            ctx.setenv(tool.variable, path)
            ctx.setenv(MARKER, path)
            ctx.note(f"{tool.variable}={path} (release {_dotted(release)})")
            return
    upgrade = "3.7" if (11, 0) in caps else "3.6"
    raise RuntimeError(
        f"no ptxas that can assemble {archs} was found for {triton_label} (looked at"
        f" $CUDA_HOME, $CUDA_PATH, $PATH, /usr/local/cuda*, pip's nvidia packages); install"
        f" CUDA >= {_needed(caps)}{_cap_note(tool)} or triton >= {upgrade}, or set"
        f" {tool.variable}")


def _dotted(release: tuple[int, int]) -> str:
    return f"{release[0]}.{release[1]}"


def _describe(path: str) -> str:
    release = probe(path)
    return f"release {_dotted(release)}" if release else "does not run or prints no release"


def _needed(caps: list[tuple[int, int]]) -> str:
    low = max(REQUIREMENTS[c][0] for c in caps)
    return f"{low[0]}.{low[1]}"


def _cap_note(tool: TritonTool) -> str:
    if tool.max_major is None:
        return ""
    return f" (and < {tool.max_major + 1}.0: triton {tool.version[0]}.{tool.version[1]}" \
           " rejects newer ptxas)"
