"""Route sglang 0.5.2-0.5.3.post1's flashinfer ``fused_add_rmsnorm`` to the fallback's
kernel when the fallback serves sgl_kernel.

These releases take the fused add + RMSNorm of ``RMSNorm.forward_cuda`` from flashinfer
whenever flashinfer is installed, and the other norms (``rmsnorm``, the Gemma variants)
from sgl_kernel.  flashinfer builds that kernel with nvcc at its first call, so on a
machine with no usable compiled kernel -- where the fallback stands in for sgl_kernel --
there is usually no CUDA toolkit either, and the first decoder layer failed with "Ninja
build failed" although every other norm already ran on the fallback.  The fallback's
``fused_add_rmsnorm`` has flashinfer's parameters and semantics (in place: ``residual +=
input``, then ``input = rmsnorm(residual) * weight``).  Where a real sgl_kernel is loaded,
or sglang took the name from sgl_kernel, the module is left alone.
"""

from __future__ import annotations

from sglang_shims.patching import PatchContext

NAME = "fused_add_rmsnorm"


def apply(ctx: PatchContext) -> None:
    from sglang_shims.kernels.ops import norm
    from sglang_shims.kernels.standin import sglang_jit

    reason = sglang_jit.not_served()
    if reason is not None:
        ctx.retire(reason)
    theirs = getattr(ctx.module, NAME, None)
    if theirs is None:
        ctx.retire(f"sglang's layernorm bound no {NAME} (not on CUDA): nothing calls flashinfer's")
    if not str(getattr(theirs, "__module__", "")).startswith("flashinfer"):
        ctx.retire(f"sglang's layernorm takes {NAME} from {theirs.__module__}, not flashinfer")
    ours = sglang_jit.replacements(ctx.module, {NAME: (norm.fused_add_rmsnorm,)})
    ctx.setattr(ctx.module, NAME, ours[NAME])
