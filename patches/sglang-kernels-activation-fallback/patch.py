"""Route sglang's JIT gated activations (``sglang.kernels``, 0.5.17+) to the fallback's
kernel when the fallback serves sgl_kernel.

0.5.17 sends SiLU/GELU-and-mul to its own JIT CUDA kernel whenever the row width fits its
vector loads (``srt/layers/activation.py``: sgl_kernel's only for the other widths).
Without a usable sgl_kernel there is no CUDA build for that kernel either (nvcc at the
first call, a CUDA-only torch op), so every MLP failed.  Where a real sgl_kernel is
loaded, sglang's own kernel is left alone.
"""

from __future__ import annotations

from sglang_shims.patching import PatchContext


def apply(ctx: PatchContext) -> None:
    from sglang_shims.kernels.standin import sglang_jit

    sglang_jit.stand_in(ctx, sglang_jit.ACTIVATION,
                         optional=("_run_activation_sorted_filtered_inplace",))
