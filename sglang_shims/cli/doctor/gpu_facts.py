"""What docs/gpus.md says about a GPU architecture, as the installed package carries it.

Why: when a kernel wheel has no image for the user's GPU, the next question is whether
sglang-shims' fallback kernels will run there instead.  The project compiles every one of
them for every CUDA architecture in CI and holds it against that architecture's limits
(``tools/gpus/compile_check.py``); the refresh's ``gpus-page`` generator writes the
verdicts, and which kernel releases carry an image for each architecture, into
``gpus.json`` beside this module (docs/ is not part of the installed package).  Missing
or unreadable, it says nothing rather than something wrong.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from .version_text import sm_name

FILE = Path(__file__).parent / "gpus.json"


@cache
def data() -> dict[str, Any]:
    """The shipped verdicts; empty when the file is missing (a partial install)."""
    try:
        found: dict[str, Any] = json.loads(FILE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return found


def fallback_text(cap: tuple[int, int]) -> str:
    """Whether the fallback kernels compile and fit on ``cap``, as CI found it."""
    arch = sm_name(cap)
    entry = data().get("arches", {}).get(arch)
    if entry is None:
        return f"the fallback kernels were not compiled for {arch} in CI (see docs/gpus.md)"
    triton = data().get("triton", "?")
    text = {
        "fits": f"the fallback compiles for it and fits its limits (checked in CI, Triton "
                f"{triton}, no GPU; run on an H200 only)",
        "fails": f"the fallback does not fit {arch}'s limits at every configuration (CI, "
                 f"Triton {triton}): see docs/gpus.md",
        "unsupported": f"Triton {triton} cannot compile for {arch}, so neither can the "
                       "fallback",
        "probe": f"the fallback was compiled for it in CI (Triton {triton}) but {arch} is "
                 "outside what sglang runs on",
    }.get(entry.get("fallback"), "see docs/gpus.md")
    if not entry.get("fp8_on_triton", True):
        text += "; its FP8 ops compute in plain torch there (no e4m3 in Triton below 8.9)"
    return text


def releases_with_image(cap: tuple[int, int]) -> list[str]:
    """The kernel releases read for docs/gpus.md whose library carries code for ``cap``."""
    entry = data().get("arches", {}).get(sm_name(cap), {})
    return [rel for rel, kind in entry.get("images", {}).items() if kind != "none"]
