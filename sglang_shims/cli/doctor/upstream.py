"""The upstream reports that doctor's findings cite, where a check and a rule meet the
same break: named once, so both send the user to the same page."""

from __future__ import annotations

SGLANG = "https://github.com/sgl-project/sglang"

TORCH_ABI = f"{SGLANG}/issues/5247"
"""A kernel built for one torch minor fails to load on another (undefined symbol)."""
CUDART_PRELOAD = f"{SGLANG}/issues/18203"
"""sgl-kernel 0.3.11-0.3.18.post2 demands a CUDA home with lib/ or lib64/."""
NVRTC_MISSING = f"{SGLANG}/issues/10951"
"""libnvrtc.so.12 (a CUDA runtime library) is not on the loader's path."""
CUDA_MAJOR_VARIANT = f"{SGLANG}/issues/29646"
"""A kernel built for CUDA 12 next to a CUDA 13 torch, or the reverse."""
GREEN_CTX_DRIVER = f"{SGLANG}/issues/8432"
"""sgl-kernel 0.2.6-0.3.5 links the green-context driver API (cuGreenCtx*)."""
NO_KERNEL_IMAGE = f"{SGLANG}/issues/7249"
"""The kernel library holds no image for the GPU's architecture."""
ARCH_LIST_ENV = f"{SGLANG}/issues/10933"
"""FlashInfer reads FLASHINFER_CUDA_ARCH_LIST, not TORCH_CUDA_ARCH_LIST."""
