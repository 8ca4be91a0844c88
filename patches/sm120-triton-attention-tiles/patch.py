"""Give sglang's Triton attention kernels tiles that fit in sm_12x shared memory.

``prefill_attention.py`` and ``extend_attention.py`` read the GPU's capability once,
at import, into a module constant ``CUDA_CAPABILITY``, and pick their tiles from it:
``> 8`` (prefill) or ``>= 9`` (extend) selects Hopper-sized tiles.  sm_120 / sm_121
(RTX 50xx, RTX PRO 6000, DGX Spark) have about 99 KB of shared memory per block, not
Hopper's 227 KB, so those tiles fail at launch with ``OutOfResources: shared memory``.
In every published release the constant is read only by those tile comparisons, so
on sm_12x those modules are made to see ``(8, 9)``: the tiles sglang already uses for
sm_86/sm_89, which have the same shared-memory limit (and which sglang >= 0.5.9 picks
for sm_12x in ``extend_attention.py`` itself).  ``extend_attention.py`` before
0.4.4.post2 has no sm_86/sm_89 branch -- any 8.x gets the A100 tiles, which overflow
~99 KB too (why that branch was added) -- so there it sees ``(7, 5)`` and takes its
"older architectures" tiles, (64, 64) / (32, 32).

The modules are imported after ``sglang.srt.utils`` (the target); they are given the
value through ``torch.cuda.get_device_capability``, which answers ``(8, 9)`` on an
sm_12x device only when called from the module body of one of those modules.  Every
other caller, and every other GPU, gets the real answer.  A module already imported
has its constant replaced directly.  A module whose source already handles
capability 12 is left alone.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from types import FrameType
from typing import Any

from sglang_shims.patching import PatchContext

SM89 = (8, 9)
OLDER = (7, 5)
# Both homes of each kernel: sglang <= 0.5.15, and sglang.kernels from 0.5.16.
MODULES = (
    "sglang.srt.layers.attention.triton_ops.prefill_attention",
    "sglang.kernels.ops.attention.prefill_attention",
    "sglang.srt.layers.attention.triton_ops.extend_attention",
    "sglang.kernels.ops.attention.extend_attention",
)
ASSIGNMENT = "CUDA_CAPABILITY = torch.cuda.get_device_capability()"
HANDLES_SM12X = re.compile(r"CUDA_CAPABILITY\[0\]\s*(==|>=)\s*12\b")


def source_of(name: str) -> str | None:
    """The source text of an sglang module, found on disk without importing it."""
    package = sys.modules.get("sglang")
    parts = name.split(".")[1:]
    for root in getattr(package, "__path__", None) or []:
        path = Path(root).joinpath(*parts[:-1], parts[-1] + ".py")
        if path.is_file():
            try:
                return path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                return None
    return None


def stand_in(source: str) -> tuple[int, int]:
    """The capability whose tiles fit ~99 KB in this module's tile code."""
    if "CUDA_CAPABILITY[0] >= 8" in source and "CUDA_CAPABILITY[1] == 9" not in source:
        return OLDER  # extend before 0.4.4.post2: every 8.x gets the sm_80 tiles
    return SM89


def modules_to_fix(ctx: PatchContext) -> dict[str, tuple[int, int]]:
    """Module name -> the capability it should see on sm_12x."""
    found = {}
    for name in MODULES:
        source = source_of(name)
        if source is None or ASSIGNMENT not in source:
            continue
        if HANDLES_SM12X.search(source):
            ctx.note(f"{name} already picks its own sm_12x tiles; left alone")
            continue
        found[name] = stand_in(source)
    return found


def _caller(frame: FrameType | None) -> FrameType | None:
    """The first frame outside wrapt (its pure-Python fallback adds frames)."""
    while frame is not None and str(frame.f_globals.get("__name__", "")).startswith("wrapt"):
        frame = frame.f_back
    return frame


def apply(ctx: PatchContext) -> None:
    # sglang.srt.utils imports torch in every release; import it only if that changed.
    torch: Any = sys.modules.get("torch") or __import__("torch")
    if getattr(torch.version, "hip", None):
        ctx.retire("ROCm build of torch: capability 12 is an AMD gfx12 GPU, not sm_12x")
    targets = modules_to_fix(ctx)
    if not targets:
        ctx.retire("every Triton attention module of this sglang picks sm_12x tiles itself")

    for name, seen in targets.items():  # imported before the shims were installed
        module = sys.modules.get(name)
        value = getattr(module, "CUDA_CAPABILITY", None)
        if isinstance(value, tuple) and value and value[0] == 12:
            ctx.setattr(module, "CUDA_CAPABILITY", seen)
            ctx.note(f"{name}.CUDA_CAPABILITY was {value}; set to {seen}")

    def answer(wrapped: Any, instance: Any, args: tuple[Any, ...],
               kwargs: dict[str, Any]) -> Any:
        result = wrapped(*args, **kwargs)
        if result[0] != 12:
            return result
        frame = _caller(sys._getframe(1))
        if frame is not None and frame.f_code.co_name == "<module>":
            return targets.get(str(frame.f_globals.get("__name__")), result)
        return result

    ctx.wrap(torch.cuda, "get_device_capability", answer)
    ctx.note("on sm_12x these modules see: "
             + ", ".join(f"{name} {seen}" for name, seen in targets.items()))
