"""Route sglang's JIT RoPE (moved to ``sglang.kernels`` in 0.5.17) to the fallback's kernel
when the fallback serves sgl_kernel.

The same gap as ``sglang-jit-rope-fallback`` closes for 0.5.9-0.5.16, in the module 0.5.17
moved the JIT kernels to: without a usable sgl_kernel (so without the CUDA build the
fallback stands in for), sglang's JIT RoPE needs nvcc at its first call and its torch ops
have a CUDA kernel only.  Where a real sgl_kernel is loaded, sglang's own kernels are left
alone.
"""

from __future__ import annotations

from sglang_shims.patching import PatchContext


def apply(ctx: PatchContext) -> None:
    from sglang_shims.kernels.standin import sglang_jit

    sglang_jit.stand_in(ctx, sglang_jit.ROPE)
