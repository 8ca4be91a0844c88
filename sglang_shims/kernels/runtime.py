"""Shared plumbing for the fallback kernels: backend choice, shapes, launch sizes.

Why a choice per call: the Triton kernels are the fast path on a GPU, but a process
without a usable ``triton`` (or a CPU tensor) must still get a correct answer, so
every public op picks between the Triton kernel and a plain-PyTorch path each time
it is called.  The pick costs an attribute read and one dictionary lookup.

``TRITON_INTERPRET=1`` (Triton's own switch for its CPU interpreter) routes CPU
tensors through the Triton kernels too; the tests use it to check the kernels'
arithmetic on a machine without a GPU.  Triton reads that variable when a kernel is
defined, so it must be set before the first kernel is used in the process.

``SGLANG_SHIMS_KERNEL_BACKEND=torch`` forces the plain-PyTorch path everywhere (to
rule the Triton kernels in or out when chasing a wrong result); unset or ``auto``
means the choice above.
"""

from __future__ import annotations

import os
from functools import cache
from typing import TYPE_CHECKING

from .._toggles import ON
from .device import MEASURED, Device, assumed, cuda_device

if TYPE_CHECKING:
    import torch

# Launches of up to this many rows (tokens) take the decode-sized configurations: the
# launch-configuration sweep measured them at 1, 8 and 32 rows on an H200
# (benchmarks/results/sweep-decode-h200-2026-12-02.md); beyond it the wrappers keep the
# configurations measured at prefill sizes (4096 and 16384 rows).  Rows in between are
# unmeasured, so they keep the prefill ones.
DECODE_ROWS = 32


@cache
def triton_available() -> bool:
    """Whether ``import triton`` works here; tried once, on the first kernel call."""
    try:
        import triton  # type: ignore[import-not-found, import-untyped, unused-ignore]

        del triton
        return True
    except Exception:  # ImportError, or a broken install raising anything at import
        return False


def interpret_mode() -> bool:
    """Whether Triton's CPU interpreter is switched on (``TRITON_INTERPRET``)."""
    return os.environ.get("TRITON_INTERPRET", "").strip().lower() in ON


def use_triton(t: torch.Tensor) -> bool:
    """Triton for CUDA tensors (or anything under the interpreter, or while a device is
    assumed for recording launches); else plain torch."""
    if os.environ.get("SGLANG_SHIMS_KERNEL_BACKEND", "").strip().lower() == "torch":
        return False
    return (t.is_cuda or interpret_mode() or assumed() is not None) and triton_available()


def gpu(t: torch.Tensor) -> Device | None:
    """The GPU ``t``'s kernels are launched for: the one assumed while recording
    (:func:`sglang_shims.kernels.device.assume`), else ``t``'s CUDA device, read once per
    device; ``None`` for CPU tensors and under Triton's interpreter."""
    dev = assumed()
    if dev is not None:
        return dev
    if not t.is_cuda or interpret_mode():
        return None
    return cuda_device(t.device.index if t.device.index is not None else _current_index())


def _current_index() -> int:
    import torch

    return int(torch.cuda.current_device())


def device_of(t: torch.Tensor) -> Device:
    """What the launch rules choose for: :func:`gpu`, else the H200 they were measured on
    (:data:`~sglang_shims.kernels.device.MEASURED`; the interpreter has no limits of its
    own)."""
    return gpu(t) or MEASURED


PDL_SHIPPED = True
"""Whether any launch uses PDL (where the GPU supports it, see :func:`use_pdl`).  On since
the kernel tests passed with it on an H200 and the table at every model width was timed
with it (2026-12-05): every decode cell of the norms and activations went from 0.79-1.01x
to at least 0.95x sgl-kernel's (which launches with PDL too).  Off again is one line here;
``benchmarks/kernels.py --no-pdl-ours`` turns it off for a measurement."""


def use_pdl(t: torch.Tensor, enable_pdl: bool | None = None) -> bool:
    """Whether a kernel on ``t`` launches with programmatic dependent launch (PDL).

    PDL lets a kernel be launched while the one before it in the stream is still running;
    the kernel waits (``gdc_wait``) before it touches memory, so only the launch latency
    is hidden, never a result.  It needs compute capability 9.0 or newer.  ``enable_pdl``
    is the op's own argument, read as sgl-kernel reads it: ``None`` means "if the device
    supports it", ``False`` never; ``True`` on an older GPU cannot be honoured and is
    ignored, as the interpreter (CPU) ignores it.
    """
    if not PDL_SHIPPED or enable_pdl is False:
        return False
    dev = gpu(t)
    return dev is not None and dev.pdl


PDL_EARLY_MAX_ROWS = DECODE_ROWS
"""The norms and the gated activations release the next kernel as soon as they start up to
this many rows, and when they exit beyond it (:func:`pdl_options`).  Why: a kernel
released early is placed beside the one still running and waits in its SM slots.  At
decode sizes the grid is small and the launch latency hidden is the gain (every decode
cell of the norms and activations went to >= 0.95x sgl-kernel's with it, H200
2026-12-05); at 256 rows the early release cost 0.3-2.8 us a call where the next kernel
is the same one (the benchmark's replays; sgl-kernel's norms release just before they
exit).  Measured on an H100 (2026-12-06, ``kernels-pdl-release-h100-2026-12-06.md``),
released at exit at 256 rows: fused_add_rmsnorm's cells below 0.95x the AOT kernel 6 -> 0,
silu_and_mul's 8 -> 1, gelu_tanh_and_mul's 7 -> 2; at 2048 rows within a few percent
either way (fused_add_rmsnorm at 2048 x 1000: 7.8 -> 3.5 us).  The FP8 per-group quantiser
was slower released late (0.98x -> 0.91x at 256 rows), so the quantisers, the matmuls and
the MoE plumbing always release at the start.  ``benchmarks/kernels.py --pdl-release
early|late`` overrides it for a measurement."""


def pdl_options(on: bool, rows: int | None = None) -> dict[str, bool]:
    """The kernel arguments and the launch option that go together for PDL (none when
    off: a kernel compiled without it is the one every GPU and the interpreter run).
    ``rows``: the launch's rows, for the kernels that take ``PDL_LATE`` (release the next
    kernel at exit rather than at the start beyond :data:`PDL_EARLY_MAX_ROWS`: the norms
    and the activations); ``None`` for kernels that always release at the start."""
    if not on:
        return {}
    if rows is not None and rows > PDL_EARLY_MAX_ROWS:
        return {"USE_PDL": True, "PDL_LATE": True, "launch_pdl": True}
    return {"USE_PDL": True, "launch_pdl": True}


def cdiv(a: int, b: int) -> int:
    """``ceil(a / b)`` for positive ``b``, as ``triton.cdiv`` (the launch rules compute grids
    without importing Triton)."""
    return -(-a // b)


def next_pow2(n: int) -> int:
    """The smallest power of two >= ``n`` (1 for ``n <= 1``)."""
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def prev_pow2(n: int) -> int:
    """The largest power of two <= ``n`` (1 for ``n <= 1``)."""
    return 1 if n <= 1 else 1 << (n.bit_length() - 1)


def rows_2d(t: torch.Tensor, width: int) -> torch.Tensor | None:
    """``t`` seen as ``[rows, width]`` with unit column stride, without copying.

    Leading dimensions are flattened when their strides allow it.  ``None`` means no
    such view exists (the caller then works on a contiguous copy).
    """
    if t.dim() == 0 or t.shape[-1] != width:
        return None
    if t.dim() == 2 and (t.stride(1) == 1 or width == 1):
        return t
    try:
        v = t.view(-1, width)
    except RuntimeError:
        return None
    return v if (v.stride(1) == 1 or width == 1) else None


def vector_align(itemsize: int, *counts: int) -> int:
    """The largest power of two, up to one 16-byte vector of ``itemsize``-byte values, that
    divides every one of ``counts`` (a row's width, the rows' strides).

    Why: Triton proves a load can be vectorised from the divisibility of the integers in its
    address and mask, and it specialises an integer argument only on "divisible by 16".  A row
    of 5000 bf16 values (10,000 bytes, every row 16-byte aligned) is therefore loaded two bytes
    at a time.  A kernel that takes each count divided by this and multiplies it back by it
    as a constexpr knows the divisibility, so it loads 16 bytes at a time.
    """
    align = max(1, 16 // max(1, itemsize))
    while align > 1 and any(c % align for c in counts):
        align //= 2
    return align


def same_memory(a: torch.Tensor, b: torch.Tensor) -> bool:
    """True when ``a`` and ``b`` are the same view of the same storage."""
    return bool(a.data_ptr() == b.data_ptr() and a.shape == b.shape
                and a.stride() == b.stride())


def num_warps_for(elements: int, per_thread: int = 8, cap: int = 16) -> int:
    """Warps for a tile of ``elements`` values, ~``per_thread`` each, as a power of two."""
    w = next_pow2(max(1, elements // (32 * per_thread)))
    return max(1, min(w, cap))
