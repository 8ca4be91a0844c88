"""Can the dynamic loader find every CUDA library the kernel needs?"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from ....patching.elf import LibraryInfo
from .. import kernel_facts as kf
from .. import upstream
from ..facts import Facts
from ..finding import Finding, Level
from ..version_text import minor_of
from .arch import loader_library, rel_path


def _lib_package(soname: str) -> str | None:
    """The pip requirement that provides a CUDA library: ``nvidia-cuda-nvrtc-cu12``."""
    match = re.fullmatch(r"(lib\w+?)\.so\.(\d+)(?:\.\d+)*", soname)
    if not match or match.group(1) not in kf.CUDA_LIB_PACKAGES:
        return None
    cu12, cu13 = kf.CUDA_LIB_PACKAGES[match.group(1)]
    return {"12": cu12, "13": f"'{cu13}==13.*'"}.get(match.group(2))


def lib_remedy(sonames: Iterable[str]) -> str:
    """One remedy for several missing libraries: a pip command, and what pip cannot fix."""
    names = list(dict.fromkeys(sonames))
    packages = list(dict.fromkeys(p for n in names if (p := _lib_package(n))))
    parts = [f"pip install {' '.join(packages)}"] if packages else []
    parts += [kf.SYSTEM_LIB_PACKAGES[n] for n in names if n in kf.SYSTEM_LIB_PACKAGES]
    rest = [n for n in names if not _lib_package(n) and n not in kf.SYSTEM_LIB_PACKAGES]
    if rest:
        parts.append(f"install what provides {', '.join(rest)}")
    return "; ".join(parts) + ", or put the folders holding them on LD_LIBRARY_PATH"


def resolve_library(facts: Facts, soname: str, info: LibraryInfo | None = None
                    ) -> tuple[str, str]:
    """How the dynamic loader would find ``soname`` when sgl_kernel loads.

    Returns (state, where): ``loader`` (RUNPATH, LD_LIBRARY_PATH, ldconfig cache or a
    default directory), ``torch`` (``import torch`` has loaded it), ``cuda-home``
    (sgl_kernel itself preloads libcudart from CUDA home), ``off-path`` (it exists,
    e.g. in pip's nvidia folder, where the loader does not look and torch does not
    preload it), ``missing``.
    """
    search = [Path(p) for p in (info.search_path if info else ())]
    for folder in [*search, *facts.lib_dirs]:
        if (folder / soname).exists():
            return "loader", str(folder / soname)
    if soname in facts.ldconfig:
        return "loader", facts.ldconfig[soname]
    if not facts.ldconfig and not facts.env.hermetic:
        import ctypes.util

        stem = soname.split(".so", 1)[0].removeprefix("lib")
        if ctypes.util.find_library(stem) == soname:
            return "loader", soname
    if soname.startswith(kf.TORCH_LIB_PREFIXES) and facts.torch_dir is not None:
        candidate = facts.torch_dir / "lib" / soname
        if candidate.exists():
            return "torch", str(candidate)
    elsewhere = [d / soname for d in facts.pip_lib_dirs if (d / soname).exists()]
    if facts.torch_dir is not None and (facts.torch_dir / "lib" / soname).exists():
        elsewhere.insert(0, facts.torch_dir / "lib" / soname)
    if elsewhere and (soname in facts.torch_needed or _torch_preloads(facts, soname)):
        return "torch", str(elsewhere[0])
    if soname.startswith("libcudart.") and facts.cuda_home:
        for sub in ("lib", "lib64"):
            candidate = Path(facts.cuda_home) / sub / soname
            if candidate.exists():
                return "cuda-home", str(candidate)
    if facts.cuda_home:
        elsewhere += [Path(facts.cuda_home) / s / soname for s in ("lib64", "lib")
                      if (Path(facts.cuda_home) / s / soname).exists()]
    if elsewhere:
        return "off-path", str(elsewhere[0])
    return "missing", ""


def _torch_preloads(facts: Facts, soname: str) -> bool:
    """Does ``import torch`` load this library from pip's nvidia folders?"""
    torch = minor_of(facts.version("torch"))
    if facts.torch_build != "cuda" or torch is None:
        return False
    stems: frozenset[str] = frozenset()
    for first, names in kf.TORCH_PRELOADS:
        if torch >= (minor_of(first) or (0, 0)):
            stems = names
    return soname.split(".so", 1)[0] in stems


def check_libs(facts: Facts) -> list[Finding]:
    """Can the loader find every library the kernel's common_ops needs?"""
    picked = loader_library(facts, facts.caps[0] if facts.caps else None)
    if picked is None:
        return []
    _key, info = picked
    where = rel_path(facts, info.path)
    out: list[Finding] = []
    found: list[str] = []
    missing: list[str] = []
    off_path: list[tuple[str, str]] = []
    for soname in info.needed:
        if soname in kf.BASE_LIBS:
            continue
        if soname.startswith(kf.TORCH_LIB_PREFIXES) and facts.torch_dir is None:
            continue  # no torch at all: sgl-kernel-abi says so once
        state, path = resolve_library(facts, soname, info)
        if state == "missing" and soname == "libcuda.so.1":
            level = Level.FAIL if facts.caps else Level.INFO
            out.append(Finding("cuda-libs", level, f"{where} needs libcuda.so.1, the NVIDIA "
                               "driver library, and it is not installed",
                               "install the NVIDIA driver" if facts.caps else ""))
        elif state == "missing":
            missing.append(soname)
        elif state == "off-path":
            off_path.append((soname, path))
        else:
            found.append(f"{soname} ({'via import torch' if state == 'torch' else path})")
    if missing:
        shown = []
        for soname in missing:
            others = _other_majors(facts, soname)
            shown.append(f"{soname} (only {', '.join(others)} found)" if others else soname)
        variant = (f"; a kernel built for another CUDA major: {upstream.CUDA_MAJOR_VARIANT}"
                   if any(_other_majors(facts, s) for s in missing) else "")
        out.append(Finding(
            "cuda-libs", Level.FAIL,
            f"{where} needs {', '.join(shown)}, which the dynamic loader cannot find: import "
            f"sgl_kernel fails with '{missing[0]}: cannot open shared object file' "
            f"({upstream.CUDART_PRELOAD}, {upstream.NVRTC_MISSING}{variant})",
            lib_remedy(missing)))
    if off_path:
        folders = ":".join(dict.fromkeys(str(Path(p).parent) for _s, p in off_path))
        out.append(Finding(
            "cuda-libs", Level.WARN,
            f"{where} needs {', '.join(s for s, _p in off_path)}; found at "
            f"{', '.join(p for _s, p in off_path)}, but not on the loader's search path, and "
            f"import torch does not load them ({upstream.NVRTC_MISSING})",
            f"export LD_LIBRARY_PATH={folders}:$LD_LIBRARY_PATH"))
    if not out:
        out.append(Finding("cuda-libs", Level.OK, f"{where} needs {len(found)} non-system "
                           f"libraries; all found: {'; '.join(found)}"))
    return out


def _other_majors(facts: Facts, soname: str) -> list[str]:
    stem = soname.split(".so", 1)[0] + ".so."
    dirs = [*facts.lib_dirs, *facts.pip_lib_dirs]
    if facts.cuda_home:
        dirs += [Path(facts.cuda_home) / "lib64", Path(facts.cuda_home) / "lib"]
    hits = {n for n in facts.ldconfig if n.startswith(stem)}
    for folder in dirs:
        if folder.is_dir():
            hits.update(p.name for p in folder.glob(stem + "*"))
    return sorted(h for h in hits if h != soname)
