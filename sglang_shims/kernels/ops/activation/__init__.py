"""Gated activations with sgl-kernel's Python signatures (sgl-kernel 0.3.5 and 0.3.18).

``silu_and_mul(input, out=None)``, ``gelu_and_mul(input, out=None)`` (exact, erf GELU)
and ``gelu_tanh_and_mul(input, out=None)``: ``input`` is ``[..., 2d]``, the result
``[..., d] = act(input[..., :d]) * input[..., d:]``, computed in fp32 and stored in
``out``'s dtype (allocated like ``input`` when ``out`` is ``None``); returns ``out``.

Accepted beyond sgl-kernel: rows whose byte width is not a multiple of 16 (sgl-kernel
raises ``ValueError`` for those because its kernel loads 16-byte vectors; ours has no
such need), any row stride, and non-contiguous tensors (through a copy).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...compile_lock import launch_kernel
from ...runtime import pdl_options, rows_2d, use_pdl, use_triton, vector_align
from . import launch

if TYPE_CHECKING:
    import torch

__all__ = ["gelu_and_mul", "gelu_tanh_and_mul", "silu_and_mul"]

SILU = 0
GELU = 1
GELU_TANH = 2
_NAMES = {SILU: "silu_and_mul", GELU: "gelu_and_mul", GELU_TANH: "gelu_tanh_and_mul"}


def silu_and_mul(input: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """``silu(x[..., :d]) * x[..., d:]``."""
    return _act_and_mul(input, out, SILU)


def gelu_and_mul(input: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """``gelu(x[..., :d]) * x[..., d:]`` with the exact (erf) GELU."""
    return _act_and_mul(input, out, GELU)


def gelu_tanh_and_mul(input: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """``gelu_tanh(x[..., :d]) * x[..., d:]`` with the tanh approximation of GELU."""
    return _act_and_mul(input, out, GELU_TANH)


def _act_and_mul(x: torch.Tensor, out: torch.Tensor | None, act: int) -> torch.Tensor:
    import torch

    name = _NAMES[act]
    if x.dim() == 0 or x.shape[-1] % 2:
        raise ValueError(f"{name}: the last dimension must be even, got shape {tuple(x.shape)}")
    d = x.shape[-1] // 2
    if out is None:
        out = torch.empty((*x.shape[:-1], d), device=x.device, dtype=x.dtype)
    act_and_mul_into(out, x, act)
    return out


def act_and_mul_into(out: torch.Tensor, x: torch.Tensor, act: int) -> None:
    """Write ``act(x[..., :d]) * x[..., d:]`` into ``out``; the op-level entry point."""
    name = _NAMES[act]
    if x.dim() == 0 or x.shape[-1] % 2:
        raise ValueError(f"{name}: the last dimension must be even, got shape {tuple(x.shape)}")
    d = x.shape[-1] // 2
    if out.dim() != x.dim() or out.shape[:-1] != x.shape[:-1] or out.shape[-1] != d:
        raise ValueError(f"{name}: out shape {tuple(out.shape)} does not fit input "
                         f"{tuple(x.shape)} (want {(*x.shape[:-1], d)})")
    if out.device != x.device:
        raise ValueError(f"{name}: out is on {out.device}, input on {x.device}")
    if out.numel() == 0:
        return
    if use_triton(x):
        _triton(out, x, act, d)
    else:
        act_and_mul_torch(out, x, act)


def act_and_mul_torch(out: torch.Tensor, x: torch.Tensor, act: int) -> None:
    """Plain-PyTorch path, fp32 arithmetic; used where Triton cannot run.

    The GELUs are spelled out: ``F.gelu`` on CPU uses a fast fp32 approximation that is
    off by ~1e-4 relative, well outside what the Triton kernel (and sgl-kernel) give.
    """
    import torch

    d = x.shape[-1] // 2
    xf = x.float()
    a, b = xf[..., :d], xf[..., d:]
    if act == SILU:
        y = a * torch.sigmoid(a)
    elif act == GELU:
        y = 0.5 * a * (1.0 + torch.erf(a * 0.7071067811865476))
    else:
        y = 0.5 * a * (1.0 + torch.tanh(0.7978845608028654 * (a + 0.044715 * a * a * a)))
    out.copy_(y * b)


def _triton(out: torch.Tensor, x: torch.Tensor, act: int, d: int) -> None:
    from .triton import act_and_mul_kernel

    x2 = rows_2d(x, 2 * d)
    if x2 is None:
        x2 = x.contiguous().view(-1, 2 * d)
    o2 = rows_2d(out, d)
    target = None
    if o2 is None:
        target, o2 = out, out.new_empty(out.shape).view(-1, d)
    n_rows = x2.shape[0]
    cfg = launch.config(n_rows, d)
    opts = pdl_options(use_pdl(x2), n_rows)
    align = vector_align(min(x2.element_size(), o2.element_size()),
                         d, x2.stride(0), o2.stride(0))
    key = ("act_and_mul", act, x2.dtype, o2.dtype, cfg["BLOCK"], cfg["num_warps"],
           tuple(opts), align)
    launch_kernel(key, act_and_mul_kernel, launch.grid(n_rows, d, cfg),
                  x2, o2, d // align, x2.stride(0) // align, o2.stride(0) // align,
                  ACT=act, ALIGN=align, **cfg, **opts)
    if target is not None:
        target.copy_(o2.view(target.shape))
