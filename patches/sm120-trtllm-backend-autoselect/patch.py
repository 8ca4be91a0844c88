"""Stop sglang 0.5.6.post1/.post2 from auto-selecting trtllm_mha on sm_12x.

When no attention backend is given, ``ServerArgs._handle_attention_backend_compatibility``
of those two releases picks ``trtllm_mha`` for MHA models when ``is_blackwell()`` is
true.  ``is_blackwell()`` answers for compute capability major 10 *and* 12, but
TRT-LLM's FMHA kernels exist only for sm_100/sm_103; a few lines later the same
function refuses its own choice on sm_12x ("TRTLLM MHA backend is only supported on
Blackwell GPUs (SM100)") and the server does not start.  sglang 0.5.7 asks
``is_sm100_supported()`` there instead (PR #14842).

The change is the name ``is_blackwell`` *as bound in sglang.srt.server_args*, which in
those releases is read exactly once, by that choice.  There it answers only for
major 10; the auto-selection then falls through to what sglang picks on any other GPU
(flashinfer if installed, else triton).  ``sglang.srt.utils.is_blackwell`` and every
other copy keep answering for sm_12x: the rest of sglang uses it correctly (FA3 is
unavailable on both, DeepGEMM and the hybrid-GDN checks).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from sglang_shims.patching import PatchContext

CALL = re.compile(r"\bis_blackwell\(")


def apply(ctx: PatchContext) -> None:
    module = ctx.module
    torch: Any = sys.modules.get("torch") or __import__("torch")
    if getattr(torch.version, "hip", None):
        ctx.retire("ROCm build of torch: capability 12 is an AMD gfx12 GPU, not sm_12x")
    source = Path(str(module.__file__)).read_text(encoding="utf-8")
    calls = len(CALL.findall(source))
    if calls != 1:
        raise RuntimeError(f"{module.__name__} calls is_blackwell() {calls} times, not once"
                           " (in the backend auto-selection); left stock")
    original = module.is_blackwell

    def is_blackwell() -> bool:
        """Datacenter Blackwell only (major 10): the GPUs TRT-LLM's FMHA kernels exist for."""
        return bool(original()) and torch.cuda.get_device_capability()[0] == 10

    is_blackwell.__wrapped__ = original  # type: ignore[attr-defined]
    ctx.setattr(module, "is_blackwell", is_blackwell)
    ctx.note("the attention-backend auto-selection no longer picks trtllm_mha on sm_12x")
