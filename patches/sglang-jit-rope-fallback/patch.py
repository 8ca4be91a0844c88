"""Route sglang's JIT RoPE to the fallback's kernel when the fallback serves sgl_kernel.

From 0.5.9 sglang runs RoPE through its own JIT-compiled CUDA kernels instead of
sgl_kernel's.  The fallback exists for machines where the compiled kernel cannot serve;
there sglang's JIT kernels have the same problem (nvcc and a CUDA build at the first call,
torch ops with a CUDA kernel only), so the dense path would still break at the first
forward pass.  Where a real sgl_kernel is loaded, sglang's own kernels are left alone.
0.5.9 and 0.5.10+ define the entry point with different parameters; each gets the
function with its own (``kernels.standin.sglang_jit.replacements``).
"""

from __future__ import annotations

from sglang_shims.patching import PatchContext


def apply(ctx: PatchContext) -> None:
    from sglang_shims.kernels.standin import sglang_jit

    # 0.5.9 has no rotary_embedding (its other head sizes went to vLLM's or sgl_kernel's)
    sglang_jit.stand_in(ctx, sglang_jit.ROPE, optional=("rotary_embedding",))
