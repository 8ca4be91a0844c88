"""Does the kernel library the loader picks hold code for each GPU?"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from ....patching.elf import LibraryInfo, arch_names
from .. import kernel_facts as kf
from .. import upstream
from ..facts import Facts
from ..finding import TRITON_FALLBACK, Finding, Level
from ..version_text import sm_name


def loader_key(keys: Collection[str], cap: tuple[int, int] | None) -> str | None:
    """Which of the common_ops folders ``keys`` sgl_kernel's loader picks: sm90/ on 9.0,
    sm100/ otherwise (no GPU included), then the flat layout of <= 0.3.12 (``""``)."""
    preferred = "sm90" if cap == (9, 0) else "sm100"
    return next((key for key in (preferred, "") if key in keys), None)


def loader_library(facts: Facts, cap: tuple[int, int] | None) -> tuple[str, LibraryInfo] | None:
    """The common_ops that sgl_kernel's loader picks (:func:`loader_key`)."""
    key = loader_key(facts.libraries.keys(), cap)
    return None if key is None else (key, facts.libraries[key])


def rel_path(facts: Facts, path: Path) -> str:
    if facts.kernel_dir is not None:
        try:
            return str(path.relative_to(facts.kernel_dir.parent))
        except ValueError:
            pass
    return str(path)


def _holdings(info: LibraryInfo) -> str:
    ptx = f"; PTX {', '.join(info.ptx)}" if info.ptx else "; no PTX"
    return f"{', '.join(info.sass) or 'no SASS'}{ptx}"


def check_arch(facts: Facts) -> list[Finding]:
    """Does the library the loader picks hold code for each GPU?"""
    if facts.kernel_dir is None:
        if facts.kernel() and not facts.env.hermetic:
            return [Finding("sgl-kernel-arch", Level.WARN, "a kernel distribution is installed but "
                            "no sgl_kernel package was found on sys.path",
                            "reinstall the kernel distribution")]
        return []
    out = [Finding("sgl-kernel-arch", Level.WARN, f"cannot read {where}: {why}")
           for where, why in facts.library_errors.items()]
    if not facts.libraries:
        if not facts.library_errors:
            out.append(Finding("sgl-kernel-arch", Level.FAIL, f"no common_ops library under "
                               f"{facts.kernel_dir}: import sgl_kernel will fail",
                               "reinstall the kernel distribution"))
        return out
    if not facts.caps:
        for _key, info in sorted(facts.libraries.items()):
            out.append(Finding("sgl-kernel-arch", Level.INFO, f"{rel_path(facts, info.path)} holds "
                               f"{_holdings(info)} (no GPU found to check against)"))
        return out
    for cap in sorted(set(facts.caps)):
        picked = loader_library(facts, cap)
        if picked is None:
            out.append(Finding("sgl-kernel-arch", Level.FAIL, f"no common_ops library the loader "
                               f"would pick for {sm_name(cap)} under {facts.kernel_dir}",
                               "reinstall the kernel distribution"))
            continue
        _key, info = picked
        hits = info.runs_on(cap)
        where = rel_path(facts, info.path)
        if any(h.is_sass for h in hits):
            used = ", ".join(arch_names(hits))
            out.append(Finding("sgl-kernel-arch", Level.OK, f"{sm_name(cap)} (cc {cap[0]}."
                               f"{cap[1]}) loads {where}, which has SASS {used} for it"))
        elif hits:
            out.append(Finding("sgl-kernel-arch", Level.OK, f"{sm_name(cap)} loads {where}: no "
                               f"SASS for it, but PTX {', '.join(arch_names(hits, ptx=True))} "
                               "is compiled by the driver at first use (slow first launch)"))
        else:
            hint = kf.ARCH_HINTS.get(cap, "")
            sass_note = f"; PTX: {', '.join(info.ptx)}" if info.ptx else ""
            out.append(Finding(
                "sgl-kernel-arch", Level.FAIL,
                f"no kernel image for {sm_name(cap)} in {where}: it holds {', '.join(info.sass)}"
                f"{sass_note}. Every sgl_kernel op fails at launch with 'no kernel image is "
                f"available for execution on the device' ({upstream.NO_KERNEL_IMAGE})",
                f"install a kernel build that contains {sm_name(cap)}"
                f"{' (' + hint + ')' if hint else ''}, or use sglang-shims' Triton fallback "
                f"tier: {TRITON_FALLBACK}"))
    return out
