"""Give sglang < 0.5.2 back the private AMX probe that torch 2.11 removed.

The public ``torch.cpu._is_amx_tile_supported()`` answers the same question from the
same capability table; the private name is restored as an alias for it, before
``sglang.srt.utils`` runs (its import-time callers follow right after).
"""

from __future__ import annotations

import sys

from sglang_shims.patching import PatchContext


def apply(ctx: PatchContext) -> None:
    torch = sys.modules.get("torch")
    if torch is None:
        import torch
    probe_module = torch._C._cpu
    if hasattr(probe_module, "_is_amx_tile_supported"):
        ctx.retire("torch._C._cpu._is_amx_tile_supported exists in this torch")
    public = getattr(getattr(torch, "cpu", None), "_is_amx_tile_supported", None)
    if public is None:

        def public() -> bool:
            return bool(probe_module._get_cpu_capability().get("amx_tile", False))

    ctx.setattr(probe_module, "_is_amx_tile_supported", public)
