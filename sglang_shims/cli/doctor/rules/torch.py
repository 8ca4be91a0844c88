"""Rules on the torch wheel itself: code for the GPUs of this machine."""

from __future__ import annotations

import re

from ....patching.elf import (
    FATBIN_KIND_ELF,
    FATBIN_KIND_PTX,
    FLAG_ARCH_SPECIFIC,
    FLAG_FAMILY,
    FatbinEntry,
)
from ..facts import Facts
from ..finding import Finding, Level
from ..version_text import public_version, sm_name, version_in
from ._common import Rule, verdict


def _torch_lacks_arch(facts: Facts) -> Finding | None:
    torch = facts.version("torch")
    if not torch or facts.torch_build != "cuda":
        return None
    for cap in sorted(set(facts.caps)):
        if facts.torch_arch_list:
            entries = [entry_from_name(n) for n in facts.torch_arch_list]
            if any(e is not None and e.runs_on(cap) for e in entries):
                continue
            why = f"its arch list is {', '.join(facts.torch_arch_list)}"
        elif cap[0] >= 10 and facts.torch_cuda and version_in(facts.torch_cuda, "<12.8"):
            why = f"it is a CUDA {facts.torch_cuda} build, and CUDA < 12.8 cannot build for it"
        else:
            continue
        return verdict(
            Level.FAIL, f"torch {torch} has no code for {sm_name(cap)}: {why}; every torch CUDA op "
            "fails with 'no kernel image is available for execution on the device'",
            "install a torch built with CUDA >= 12.8: pip install "
            f"'torch=={public_version(torch)}' "
            "--index-url https://download.pytorch.org/whl/cu128 (or cu129 / cu130)")
    return None


def entry_from_name(name: str) -> FatbinEntry | None:
    match = re.fullmatch(r"(sm|compute)_(\d+)([af]?)", name)
    if not match:
        return None
    kind = FATBIN_KIND_ELF if match.group(1) == "sm" else FATBIN_KIND_PTX
    flags = {"a": FLAG_ARCH_SPECIFIC, "f": FLAG_FAMILY}.get(match.group(3), 0)
    return FatbinEntry(kind, int(match.group(2)), flags)


RULES: tuple[Rule, ...] = (
    Rule("torch-wheel-lacks-sm120", "https://github.com/pytorch/pytorch/issues/167244",
         "GPU not in torch's arch list, or cc >= 10 with a torch CUDA < 12.8", _torch_lacks_arch),
)
