"""Where the kernel library has no image for a GPU: will the fallback kernels run there?

The ``sgl-kernel-arch`` check says that ``sgl_kernel`` cannot launch on the GPU; this one
says what CI found for sglang-shims' Triton fallback on that architecture (compiled for it
and held against its limits, ``gpu_facts``) and which kernel releases read for
docs/gpus.md carry code for it.  Quiet where the installed library has code for the GPU.
"""

from __future__ import annotations

from .. import gpu_facts
from ..facts import Facts
from ..finding import Finding, Level
from ..version_text import sm_name
from .arch import loader_library

CHECK = "gpu-fallback"


def check_fallback(facts: Facts) -> list[Finding]:
    """One finding per GPU architecture that the installed kernel (if any) cannot run on."""
    installed = facts.kernel()
    out = []
    for cap in sorted(set(facts.caps)):
        picked = loader_library(facts, cap) if facts.kernel_dir is not None else None
        if picked is not None and picked[1].runs_on(cap):
            continue
        who = f"{installed[0]} {installed[1]}" if installed else "the installed kernel"
        if facts.kernel_dir is None:
            named = ("no kernel distribution is installed" if installed is None
                     else f"{who} is installed without its sgl_kernel package")
        else:
            named = f"{who} has no image for it"
        carrying = gpu_facts.releases_with_image(cap)
        releases = (f"; kernel releases read for docs/gpus.md with code for it: "
                    f"{', '.join(carrying)}" if carrying else
                    "; none of the kernel releases read for docs/gpus.md has code for it")
        out.append(Finding(CHECK, Level.INFO, f"your GPU is {sm_name(cap)}; {named}; "
                           f"{gpu_facts.fallback_text(cap)}{releases}"))
    return out
