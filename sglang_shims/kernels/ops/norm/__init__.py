"""RMSNorm ops with sgl-kernel's Python signatures (read from sgl-kernel 0.3.5 and 0.3.18).

* ``rmsnorm(input, weight, eps=1e-6, out=None, enable_pdl=None) -> out``
* ``fused_add_rmsnorm(input, residual, weight, eps=1e-6, enable_pdl=None) -> None``:
  ``residual += input``, then ``input = rmsnorm(residual) * weight``; both in place.
* ``gemma_rmsnorm`` / ``gemma_fused_add_rmsnorm``: the same with ``(1 + weight)``.

Arithmetic is fp32 throughout: the weight is widened to fp32 before ``1 +`` is added
(rounding ``1 + w`` to bf16 would lose most of a small ``w``), the mean of squares is
accumulated in fp32, and only the results are rounded to the tensors' dtypes.  The
fused forms normalise the fp32 sum, not the residual after rounding, as sgl-kernel
does.

Accepted beyond sgl-kernel (which takes 2-D fp16/bf16 rows with unit column stride
and a weight of the input's dtype): any rank (leading dimensions are flattened), any
row stride, fp32 tensors, a weight of another float dtype, and tensors whose columns
are strided (worked on through a contiguous copy, written back in place).
``enable_pdl`` is read as sgl-kernel reads it (``None``: on where the GPU supports
programmatic dependent launch, compute capability 9.0+): the kernel is then launched while
the one before it still runs and waits for it before touching memory, which hides the
launch latency a decode step pays per kernel.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...compile_lock import launch_kernel
from ...runtime import pdl_options, rows_2d, use_pdl, use_triton, vector_align
from . import launch

if TYPE_CHECKING:
    import torch

__all__ = ["fused_add_rmsnorm", "gemma_fused_add_rmsnorm", "gemma_rmsnorm", "rmsnorm"]


def rmsnorm(input: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6,
            out: torch.Tensor | None = None, enable_pdl: bool | None = None) -> torch.Tensor:
    """``out = input / rms(input) * weight``; returns ``out`` (allocated if ``None``)."""
    return _normed(input, weight, eps, out, enable_pdl, 0.0)


def gemma_rmsnorm(input: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6,
                  out: torch.Tensor | None = None, enable_pdl: bool | None = None) -> torch.Tensor:
    """``out = input / rms(input) * (1 + weight)``, ``1 + weight`` in fp32."""
    return _normed(input, weight, eps, out, enable_pdl, 1.0)


def fused_add_rmsnorm(input: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor,
                      eps: float = 1e-6, enable_pdl: bool | None = None) -> None:
    """In place: ``residual += input``; ``input = residual / rms(residual) * weight``."""
    norm_into(input, input, residual, weight, eps, 0.0, enable_pdl)


def gemma_fused_add_rmsnorm(input: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor,
                            eps: float = 1e-6, enable_pdl: bool | None = None) -> None:
    """In place: ``residual += input``; ``input = residual / rms(residual) * (1 + weight)``."""
    norm_into(input, input, residual, weight, eps, 1.0, enable_pdl)


def _normed(input: torch.Tensor, weight: torch.Tensor, eps: float, out: torch.Tensor | None,
            enable_pdl: bool | None, offset: float) -> torch.Tensor:
    """The out-of-place forms: ``out`` allocated like ``input`` when the caller gives none."""
    import torch

    if out is None:
        out = torch.empty_like(input)
    norm_into(out, input, None, weight, eps, offset, enable_pdl)
    return out


def _check(out: torch.Tensor, x: torch.Tensor, residual: torch.Tensor | None,
           weight: torch.Tensor) -> int:
    if x.dim() == 0:
        raise ValueError("rmsnorm: input must have at least one dimension")
    hidden = x.shape[-1]
    if weight.dim() != 1 or weight.shape[0] != hidden:
        raise ValueError(f"rmsnorm: weight must have shape ({hidden},), got {tuple(weight.shape)}")
    if out.shape != x.shape:
        raise ValueError(f"rmsnorm: out shape {tuple(out.shape)} != input {tuple(x.shape)}")
    if residual is not None and residual.shape != x.shape:
        raise ValueError(
            f"fused_add_rmsnorm: residual shape {tuple(residual.shape)} != input {tuple(x.shape)}")
    for t in (out, weight, residual):
        if t is not None and t.device != x.device:
            raise ValueError(f"rmsnorm: tensors on different devices: {x.device} and {t.device}")
    return int(hidden)


def norm_into(out: torch.Tensor, x: torch.Tensor, residual: torch.Tensor | None,
              weight: torch.Tensor, eps: float, weight_offset: float,
              enable_pdl: bool | None = None) -> None:
    """Write the (fused-add) RMSNorm of ``x`` into ``out``; the op-level entry point.

    With ``residual``: ``residual`` becomes ``x + residual`` and ``out`` its norm
    (``out`` is ``x`` for the fused ops).  ``weight_offset`` is 0 (RMSNorm) or 1 (Gemma).
    """
    hidden = _check(out, x, residual, weight)
    if x.numel() == 0:
        return
    if use_triton(x):
        _norm_triton(out, x, residual, weight, float(eps), weight_offset, hidden,
                     use_pdl(x, enable_pdl))
    else:
        norm_torch(out, x, residual, weight, float(eps), weight_offset)


def norm_torch(out: torch.Tensor, x: torch.Tensor, residual: torch.Tensor | None,
               weight: torch.Tensor, eps: float, weight_offset: float) -> None:
    """Plain-PyTorch path, fp32 arithmetic; used where Triton cannot run."""
    import torch

    xf = x.float()
    if residual is not None:
        xf = xf + residual.float()
        residual.copy_(xf)
    w = weight.float() + weight_offset
    out.copy_(xf * torch.rsqrt(xf.square().mean(-1, keepdim=True) + eps) * w)


def _norm_triton(out: torch.Tensor, x: torch.Tensor, residual: torch.Tensor | None,
                 weight: torch.Tensor, eps: float, weight_offset: float, hidden: int,
                 pdl: bool = False) -> None:
    from .triton import rmsnorm_kernel

    x2 = rows_2d(x, hidden)
    o2 = out if out is x else rows_2d(out, hidden)
    r2 = None if residual is None else rows_2d(residual, hidden)
    fallback = x2 is None or o2 is None or (residual is not None and r2 is None)
    if fallback:
        # Strides no 2-D view can express: work on contiguous copies, then write back.
        xc = x.contiguous().view(-1, hidden)
        rc = None if residual is None else residual.contiguous().view(-1, hidden)
        oc = xc if out is x else out.new_empty(out.shape).view(-1, hidden)
        _norm_triton(oc, xc, rc, weight, eps, weight_offset, hidden, pdl)
        out.copy_(oc.view(out.shape))
        if residual is not None and rc is not None:
            residual.copy_(rc.view(residual.shape))
        return
    assert x2 is not None and o2 is not None
    o2 = x2 if out is x else o2
    w = weight if weight.stride(0) == 1 else weight.contiguous()
    n_rows = x2.shape[0]
    single = launch.single_pass(hidden)
    cfg = launch.config(n_rows, hidden, fused=r2 is not None)
    rr = x2 if r2 is None else r2
    strides = (x2.stride(0), rr.stride(0), o2.stride(0))
    align = vector_align(min(x2.element_size(), rr.element_size(), o2.element_size()),
                         hidden, *strides)
    opts = pdl_options(pdl, n_rows)
    key = ("rmsnorm", x2.dtype, o2.dtype, r2 is not None, weight_offset, single,
           cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["num_warps"], tuple(opts), align)
    launch_kernel(key, rmsnorm_kernel, launch.grid(n_rows, cfg),
                  x2, rr, w, o2,
                  n_rows, hidden // align,
                  *(s // align for s in strides),
                  eps,
                  ALIGN=align,
                  WEIGHT_OFFSET=float(weight_offset),
                  HAS_RESIDUAL=r2 is not None,
                  SINGLE_PASS=single,
                  **cfg, **opts)
