"""Device queries that sgl-kernel exports next to its ops (``sgl_kernel.utils``).

sglang 0.5.17 asks ``sgl_kernel.utils.is_arch_support_pdl()`` whether the GPU can
use programmatic dependent launch, and passes the answer to its own kernels (its
Triton attention backend, for one).  The answer is a property of the GPU, not of the
kernel library, so the stand-in gives the same one sgl-kernel does: compute capability
9.0 or newer.  Our own kernels accept ``enable_pdl`` and ignore it.
"""

from __future__ import annotations

from functools import cache

__all__ = ["is_arch_support_pdl"]


@cache
def is_arch_support_pdl() -> bool:
    """True on Hopper (sm_90) and newer, as ``sgl_kernel.utils.is_arch_support_pdl``."""
    import torch

    if not torch.cuda.is_available():
        return False
    major, _ = torch.cuda.get_device_capability(torch.cuda.current_device())
    return bool(major >= 9)
