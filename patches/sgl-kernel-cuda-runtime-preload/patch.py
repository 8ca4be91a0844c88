"""Let sgl_kernel load in environments whose CUDA comes only from pip wheels.

sgl_kernel's ``common_ops`` library lists ``libcudart.so.<N>`` and ``libnvrtc.so.<N>``
among its needed libraries (read with ``readelf -d`` from every kernel wheel examined,
0.3.5-0.4.0) and has no RUNPATH, so the dynamic loader finds them only if they are
already loaded or on the system search path.  torch loads libcudart itself, but not
always libnvrtc, and pip's copies (``site-packages/nvidia/cuda_nvrtc/lib``,
``nvidia/cu13/lib``) are not on any search path:
``ImportError: libnvrtc.so.12: cannot open shared object file``.  Loading pip's copy
first, with ``RTLD_GLOBAL``, makes the loader find it by its soname.  sgl_kernel's own
preload cannot help: it looks only in toolkit directories, only for ``.so.12`` up to
0.3.21, and from 0.3.13 it runs after ``common_ops`` is loaded.

sgl-kernel 0.3.11-0.3.18.post2 also raise ``RuntimeError("Could not find CUDA lib
directory.")`` when torch has CUDA and the CUDA home they guess ($CUDA_HOME, $CUDA_PATH,
``nvcc`` on PATH, else /usr/local/cuda) has no ``lib``, no ``lib64`` and no
``libcudart.so.12`` below it.  When that check would fail and neither variable is set,
CUDA_HOME is set to pip's CUDA runtime folder, which has a ``lib``.

The CUDA major comes from torch: ``torch.version.cuda`` if torch is imported, else its
``torch/version.py`` (read, not imported).
"""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from importlib import metadata
from pathlib import Path

from sglang_shims.patching import KERNEL_DISTS, PatchContext

LIBRARIES = ("libcudart", "libnvrtc")
# The kernels whose import raises "Could not find CUDA lib directory." (read from the
# wheels: 0.3.11 and 0.3.16.post3 in __init__.py, 0.3.18.post2 in load_utils.py;
# 0.3.10 has no such check, 0.3.18.post3 only logs).
CUDA_HOME_CHECK = ((0, 3, 11, 0), (0, 3, 18, 3))


def _dlopen_global(path: Path) -> None:
    ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)


def _on_search_path(soname: str) -> bool:
    """Would the dynamic loader find ``soname`` by itself? ($LD_LIBRARY_PATH, then the
    ld.so cache, which holds the default directories.)  Nothing is loaded to find out:
    loading a system copy before torch would change which copy torch gets."""
    for folder in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep):
        if folder and (Path(folder) / soname).exists():
            return True
    ldconfig = shutil.which("ldconfig") or "/sbin/ldconfig"
    try:
        listing = subprocess.run([ldconfig, "-p"], capture_output=True, text=True,
                                 timeout=10, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    return any(line.split(" ", 1)[0].strip() == soname for line in listing.splitlines())


def _already_loaded(soname: str) -> bool:
    """Is a library with this soname in the process? (dlopen with RTLD_NOLOAD)"""
    try:
        ctypes.CDLL(soname, mode=getattr(os, "RTLD_NOLOAD", 4))
    except OSError:
        return False
    return True


# Seams for tests (fake library files cannot be dlopened; /usr/local/cuda is the host's).
load: Callable[[Path], None] = _dlopen_global
is_loaded: Callable[[str], bool] = _already_loaded
on_search_path: Callable[[str], bool] = _on_search_path
DEFAULT_CUDA_HOME = "/usr/local/cuda"


def kernel_version(ctx: PatchContext) -> tuple[str, tuple[int, int, int, int]] | None:
    """The installed kernel's version, as text and as numbers; None without a kernel."""
    for dist in KERNEL_DISTS:
        text = ctx.version(dist)
        if text is not None:
            return text, version_key(text)
    return None


def version_key(text: str) -> tuple[int, int, int, int]:
    """0.3.18.post2 -> (0, 3, 18, 2); a local label (+cu130) is ignored."""
    found = re.match(r"(\d+)\.(\d+)\.(\d+)(?:\.post(\d+))?", text)
    if not found:
        return (0, 0, 0, 0)
    major, minor, micro, post = found.groups()
    return (int(major), int(minor), int(micro), int(post or 0))


_VERSION_PY = re.compile(r"^cuda\s*(?::[^=\n]*)?=\s*(?:'([\d.]+)'|\"([\d.]+)\"|(None))", re.M)


def torch_cuda() -> tuple[str | None, str]:
    """torch's CUDA version and where it was read; None for a CPU or ROCm build."""
    torch = sys.modules.get("torch")
    version = getattr(torch, "version", None) if torch is not None else None
    if version is not None and hasattr(version, "cuda"):
        return version.cuda, "torch.version.cuda"
    try:
        dist = metadata.distribution("torch")
    except metadata.PackageNotFoundError:
        return None, "torch is not installed"
    source = Path(str(dist.locate_file("torch/version.py")))
    try:
        found = _VERSION_PY.search(source.read_text(encoding="utf-8"))
    except OSError:
        found = None
    if found:
        return found.group(1) or found.group(2), str(source)
    local = re.search(r"\+cu(\d{2,3})$", dist.version)  # 2.8.0+cu128 -> 12.8
    if local:
        digits = local.group(1)
        return f"{digits[:-1]}.{digits[-1]}", f"torch {dist.version}"
    return None, f"torch {dist.version} (no CUDA version found)"


def site_dirs() -> Iterator[Path]:
    """Folders that may hold pip's nvidia/* wheels: torch's own first, then sys.path."""
    seen: set[Path] = set()
    try:
        yield from _once(Path(str(metadata.distribution("torch").locate_file(""))), seen)
    except metadata.PackageNotFoundError:
        pass
    for entry in sys.path:
        if entry:
            yield from _once(Path(entry), seen)


def _once(path: Path, seen: set[Path]) -> Iterator[Path]:
    try:
        resolved = path.resolve()
    except OSError:
        return
    if resolved not in seen and (resolved / "nvidia").is_dir():
        seen.add(resolved)
        yield resolved


def pip_copy(soname: str) -> Path | None:
    """``nvidia/<package>/lib/<soname>`` (cuda_runtime, cuda_nvrtc, cu13 ...)."""
    for site in site_dirs():
        hits = sorted((site / "nvidia").glob(f"*/lib/{soname}"))
        if hits:
            return hits[0]
    return None


def guessed_cuda_home(environ: Mapping[str, str]) -> Path:
    """The CUDA home sgl-kernel 0.3.11-0.3.18.post2 compute (their _find_cuda_home)."""
    home = environ.get("CUDA_HOME") or environ.get("CUDA_PATH")
    if home is None:
        nvcc = shutil.which("nvcc")
        home = str(Path(nvcc).parent.parent) if nvcc else DEFAULT_CUDA_HOME
    return Path(home)


def passes_check(home: Path) -> bool:
    """Their check: a lib or lib64 folder, or a libcudart.so.12 anywhere below."""
    if (home / "lib").is_dir() or (home / "lib64").is_dir():
        return True
    try:
        return next(home.rglob("libcudart.so.12"), None) is not None
    except OSError:
        return False


def apply(ctx: PatchContext) -> None:
    cuda, where = torch_cuda()
    if not cuda:
        ctx.retire(f"torch has no CUDA ({where}): sgl_kernel loads no CUDA library")
    major = cuda.split(".")[0]
    ctx.note(f"CUDA {cuda} (from {where})")
    acted = False
    runtime_copy: Path | None = None
    for library in LIBRARIES:
        soname = f"{library}.so.{major}"
        copy = pip_copy(soname)
        if library == "libcudart":
            runtime_copy = copy
        if is_loaded(soname):
            ctx.note(f"{soname} is already loaded")
            continue
        if on_search_path(soname):  # common_ops will find that copy, as it does stock
            ctx.note(f"{soname} is on the loader's search path")
            continue
        if copy is None:
            ctx.note(f"{soname}: not loaded, not on the system search path, and no pip"
                     " copy under nvidia/*/lib")
            continue
        load(copy)
        acted = True
        ctx.note(f"preloaded {copy} (RTLD_GLOBAL)")

    kernel = kernel_version(ctx)
    low, high = CUDA_HOME_CHECK
    if kernel is not None and low <= kernel[1] < high:
        home = guessed_cuda_home(os.environ)
        if not passes_check(home):
            configured = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
            if configured:
                raise RuntimeError(
                    f"sgl-kernel {kernel[0]} will raise 'Could not find CUDA lib directory.':"
                    f" {home} (your CUDA_HOME/CUDA_PATH) has no lib, lib64 or"
                    " libcudart.so.12; it is your setting, so it is left as it is")
            if runtime_copy is None:
                raise RuntimeError(
                    f"sgl-kernel {kernel[0]} will raise 'Could not find CUDA lib directory.':"
                    f" no CUDA toolkit at {home} and no pip CUDA runtime"
                    f" (nvidia/*/lib/libcudart.so.{major}); set CUDA_HOME to a CUDA"
                    " toolkit, or install nvidia-cuda-runtime")
            ctx.setenv("CUDA_HOME", str(runtime_copy.parent.parent))
            acted = True
    if not acted:
        ctx.retire("nothing to load: each CUDA library common_ops needs is already loaded, on"
                   " the loader's search path, or without a pip copy (see the notes), and no"
                   " CUDA-home check fails")
