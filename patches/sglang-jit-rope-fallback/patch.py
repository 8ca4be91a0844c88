"""Route sglang's JIT RoPE to the fallback's kernel when the fallback serves sgl_kernel.

sglang 0.5.9 took RoPE out of sgl_kernel into their own JIT-compiled CUDA kernel.
The fallback exists for machines where the compiled kernel cannot serve; there sglang's
JIT kernel has the same problem (it needs nvcc and a CUDA build at the first call), so the
dense path would still break at the first forward pass.  Where a real sgl_kernel is
loaded, sglang's own kernel is left alone.
"""

from __future__ import annotations

import importlib

from sglang_shims.patching import PatchContext

NAME = "apply_rope_with_cos_sin_cache_inplace"


def apply(ctx: PatchContext) -> None:
    try:
        kernel = importlib.import_module("sgl_kernel")
    except ImportError:
        ctx.retire("sgl_kernel cannot be imported and the fallback does not stand in for it")
    if not getattr(kernel, "__sglang_shims_fallback__", None):
        ctx.retire("a real sgl_kernel is loaded: sglang's own JIT RoPE is used")
    from sglang_shims import kernels

    ctx.setattr(ctx.module, NAME, kernels.OPS[NAME])
