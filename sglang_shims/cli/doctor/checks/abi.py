"""Was the installed kernel built for the installed torch (major.minor)?"""

from __future__ import annotations

from .. import upstream
from ..facts import Facts
from ..finding import Finding, Level
from ..kernel_facts import builds_for_torch, kernel_builds
from ..requires import sglang_pins
from ..version_text import minor_of, public_version


def sglang_pin_text(facts: Facts) -> str:
    """``sglang 0.5.5 pins torch==2.8.0, sgl-kernel==0.3.16.post5``, or empty."""
    sglang = facts.version("sglang")
    if not sglang or "sglang" not in facts.requires:
        return ""
    pins = sglang_pins(facts.requires["sglang"])
    keep = [p for p in pins if p.default and p.dist in ("torch", "sgl-kernel", "sglang-kernel")]
    return f"sglang {sglang} pins " + ", ".join(f"{p.dist}{p.spec}" for p in keep) if keep else ""


def abi_remedy(facts: Facts, dist: str, version: str, built: str, torch_version: str) -> str:
    options = [f"pip install 'torch=={built}' (the torch {dist} {version} was built with)"]
    matching = builds_for_torch(torch_version)
    if matching:
        newest = matching[-1]
        ranges = " or ".join(f"{b.dist} {b.first}–{b.last}" for b in matching)
        swap = (f"pip uninstall -y {dist} && " if newest.dist != dist else "")
        options.append(f"keep torch {torch_version} and install a kernel built for it: "
                       f"{swap}pip install '{newest.dist}=={newest.last}' ({ranges} were built "
                       f"with torch {newest.torch})")
    else:
        options.append(f"no published kernel was built with torch "
                       f"{'.'.join(map(str, minor_of(torch_version) or ()))}, so change torch")
    pinned = sglang_pin_text(facts)
    if pinned:
        options.append(f"or follow sglang's own pins: {pinned}")
    return "; ".join(options) + f". See {upstream.TORCH_ABI}"


def check_abi(facts: Facts) -> list[Finding]:
    """Was the kernel built for the installed torch (major.minor)?"""
    kernel = facts.kernel()
    if kernel is None:
        return []
    dist, version = kernel
    builds = kernel_builds(version)
    if not builds:
        return [Finding("sgl-kernel-abi", Level.INFO, f"{dist} {version} is not in sglang-shims' "
                        "table of kernel builds; cannot tell which torch it was built with")]
    built = builds[0].torch
    torch_version = facts.version("torch")
    if not torch_version:
        return [Finding("sgl-kernel-abi", Level.FAIL, f"{dist} {version} was built against torch "
                        f"{built}, and torch is not installed: sgl_kernel cannot load",
                        f"pip install 'torch=={built}'")]
    loads = [b for b in builds[0].also if minor_of(b) == minor_of(torch_version)]
    if loads:
        why = (f"sglang pinned it with torch {loads[0]} too (the wheel is gone from PyPI and "
               "could not be read)" if builds[0].gone else
               f"every torch symbol it imports is also exported by torch {loads[0]}")
        return [Finding("sgl-kernel-abi", Level.OK,
                        f"{dist} {version} was built against torch {built}; {why}, the minor of "
                        f"the installed {torch_version}")]
    if minor_of(torch_version) != minor_of(built):
        detail = (f"{dist} {version} was built against torch {built}; torch {torch_version} is "
                  "installed: loading it fails with an undefined-symbol error (the C++ ABI "
                  "changes between torch minors)")
        return [Finding("sgl-kernel-abi", Level.FAIL, detail,
                        abi_remedy(facts, dist, version, built, torch_version))]
    note = "" if public_version(torch_version) == built else (
        f"; torch {torch_version} is another patch release of the same minor")
    return [Finding("sgl-kernel-abi", Level.OK,
                    f"{dist} {version} was built against torch {built}{note}")]
